package main

import (
	"testing"
	"time"
)

// TestParseHostBusy: the busy time is user, nice, system, irq and softirq
// of the first line, in USER_HZ; idle, iowait and steal are not busy, and
// a line that is not /proc/stat's sum is refused.
func TestParseHostBusy(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"kernel 6.18", "cpu  100 20 300 9999 88 4 6 777 0 0\ncpu0 50 10 150 5000 44 2 3 388 0 0\n", 430 * 10 * time.Millisecond, true},
		{"old kernel, no steal", "cpu  1 2 3 4 5 6 7\n", 19 * 10 * time.Millisecond, true},
		{"per-CPU line first", "cpu0 1 2 3 4 5 6 7 8\n", 0, false},
		{"too short", "cpu  1 2 3 4 5 6\n", 0, false},
		{"not a number", "cpu  1 x 3 4 5 6 7 8\n", 0, false},
		{"empty", "", 0, false},
	} {
		got, ok := parseHostBusy([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("%s: parseHostBusy = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
