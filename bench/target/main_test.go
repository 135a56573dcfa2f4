package main

import (
	"maps"
	"testing"
	"time"
)

func TestLatencyFlag(t *testing.T) {
	for _, tc := range []struct {
		in      []string // one Set call each
		want    map[string]time.Duration
		wantErr bool
	}{
		{[]string{"FETCH=200ms"}, map[string]time.Duration{"FETCH": 200 * time.Millisecond}, false},
		{[]string{"LOGIN=1s,MAIL=50ms", "DATA=2s"}, map[string]time.Duration{"LOGIN": time.Second, "MAIL": 50 * time.Millisecond, "DATA": 2 * time.Second}, false},
		{[]string{"FETCH=1s", "FETCH=2s"}, map[string]time.Duration{"FETCH": 2 * time.Second}, false},
		{[]string{"FETCH"}, nil, true},
		{[]string{"FETCH=soon"}, nil, true},
	} {
		var l latencyFlag
		var err error
		for _, v := range tc.in {
			if err = l.Set(v); err != nil {
				break
			}
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("Set(%q): err %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !maps.Equal(map[string]time.Duration(l), tc.want) {
			t.Errorf("Set(%q) = %v, want %v", tc.in, l, tc.want)
		}
	}
}
