package host

import (
	"errors"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	n, err := parseMemAvailable([]byte("MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   20480000 kB\n"))
	if err != nil || n != 20480000*1024 {
		t.Errorf("= %d, %v", n, err)
	}
	if _, err := parseMemAvailable([]byte("MemTotal: 1 kB\n")); !errors.Is(err, ErrNoMemInfo) {
		t.Errorf("no MemAvailable: %v", err)
	}
}
