package smtpsink

import (
	"bytes"
	"fmt"
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

// TestIdleTimeout: a client that goes silent is dropped after ReadTimeout
// (at least 63/64 of it, see deadlineSlackDiv), with the deadlines set at
// accept (equal timeouts) and by go-smtp (different ones), silent right
// after the banner, after EHLO, and in the middle of message data.
func TestIdleTimeout(t *testing.T) {
	const rt = 400 * time.Millisecond
	for _, wt := range []time.Duration{rt, 3 * time.Second} {
		for _, tc := range []struct {
			name  string
			steps []string // written one by one, one reply read after each
			want  int      // the reply to silence
		}{
			{"after banner", nil, 421},
			{"after EHLO", []string{"EHLO c\r\n"}, 421},
			{"in DATA", []string{"EHLO c\r\n", "MAIL FROM:<a@x>\r\n", "RCPT TO:<b@y>\r\n", "DATA\r\n", "Subject: x\r\n\r\npart"}, 451},
		} {
			t.Run(fmt.Sprintf("write timeout %v, %s", wt, tc.name), func(t *testing.T) {
				s := startSink(t, Options{ReadTimeout: rt, WriteTimeout: wt})
				c := dialRaw(t, s.Addr().String())
				start := time.Now()
				if code, _ := c.reply(); code != 220 {
					t.Fatalf("banner %d", code)
				}
				for i, step := range tc.steps {
					c.write(step)
					if i == len(tc.steps)-1 && tc.want == 451 {
						break // the data has no reply until the end
					}
					if code, msg := c.reply(); code/100 != 2 && code != 354 {
						t.Fatalf("%q: %d %s", step, code, msg)
					}
				}
				silent := time.Now()
				code, msg := c.reply()
				waited := time.Since(silent)
				if code != tc.want {
					t.Fatalf("reply to silence %d %q, want %d", code, msg, tc.want)
				}
				if min := rt - rt/deadlineSlackDiv - 10*time.Millisecond; waited < min || time.Since(start) > rt+2*time.Second {
					t.Errorf("dropped after %v of silence (%v since dial), want about %v", waited, time.Since(start), rt)
				}
				if tc.want == 421 {
					if code, _ := c.reply(); code != -1 {
						t.Errorf("connection open after 421 (reply %d)", code)
					}
				}
			})
		}
	}
}
