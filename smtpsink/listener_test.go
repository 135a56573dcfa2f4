package smtpsink

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The read-ahead returns the same bytes, in order, whatever the caller's
// buffer size, and holds no buffer once it has handed everything out.
func TestTrackedConnReadAhead(t *testing.T) {
	for _, size := range []int{1, 7, 4096, readAheadSize, readAheadSize + 1} {
		a, b := net.Pipe()
		tc := &trackedConn{Conn: a}
		want := bytes.Repeat([]byte("0123456789abcdefghij\r\n"), 5000)
		go func() {
			for i := 0; i < len(want); i += 10000 {
				b.Write(want[i:min(i+10000, len(want))])
			}
			b.Close()
		}()
		var got []byte
		buf := make([]byte, size)
		for {
			n, err := tc.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("buffer %d: got %d bytes, want %d (equal prefix: %v)", size, len(got), len(want), bytes.HasPrefix(want, got))
		}
		if tc.ahead != nil {
			t.Fatalf("buffer %d: read-ahead buffer still held at EOF", size)
		}
		a.Close()
	}
}

func TestCoarseDeadline(t *testing.T) {
	now := time.Now()
	set := now.Add(60 * time.Second)
	for _, c := range []struct {
		t, set time.Time
		skip   bool
	}{
		{now.Add(60*time.Second + 500*time.Millisecond), set, true}, // < 60 s/64 later
		{now.Add(62 * time.Second), set, false},                     // ≥ 60 s/64 later
		{now.Add(30 * time.Second), set, false},                     // earlier: always applied
		{time.Time{}, set, false},                                   // clearing
		{now.Add(60 * time.Second), time.Time{}, false},             // first deadline
		{now.Add(200*time.Millisecond + 2*time.Millisecond), now.Add(200 * time.Millisecond), true},
		{now.Add(200*time.Millisecond + 10*time.Millisecond), now.Add(200 * time.Millisecond), false},
	} {
		if got := coarse(c.t, c.set); got != c.skip {
			t.Errorf("coarse(now+%v, now+%v) = %v, want %v", c.t.Sub(now), c.set.Sub(now), got, c.skip)
		}
	}
}
