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

func TestParsePortRange(t *testing.T) {
	if n, err := parsePortRange("32768\t60999\n"); err != nil || n != 28232 {
		t.Errorf("= %d, %v; want 28232", n, err)
	}
	for _, bad := range []string{"", "1", "9 1", "a b"} {
		if _, err := parsePortRange(bad); !errors.Is(err, ErrNoPortRange) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestOpenFileLimit(t *testing.T) {
	if n, err := OpenFileLimit(); err != nil || n < 64 {
		t.Errorf("= %d, %v: want the process's limit", n, err)
	}
}
