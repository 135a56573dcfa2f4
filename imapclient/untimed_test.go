package imapclient

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/lib/msgsum"
	"github.com/mailbench/mailbench/measure"
)

// slowHasher is a body hasher that takes d on its first write: a generator
// too slow to hash what it fetches.
type slowHasher struct {
	w    io.Writer
	d    time.Duration
	done bool
}

func (s *slowHasher) Write(p []byte) (int, error) {
	if !s.done {
		s.done = true
		time.Sleep(s.d)
	}
	return s.w.Write(p)
}

// Hashing a fetched body is mailbench's work, not the server's: it is left
// out of the FETCH_NUM_BODYALL duration, however slow it is.
func TestFetchBodyTimingLeavesOutHashing(t *testing.T) {
	const hashTime = 300 * time.Millisecond
	defer func(f func() (io.Writer, func() string)) { newBodyHasher = f }(newBodyHasher)
	newBodyHasher = func() (io.Writer, func() string) {
		w, sum := msgsum.NewBodyHasher()
		return &slowHasher{w: w, d: hashTime}, sum
	}
	msg := "X-Mailbench-Id: m1\r\n\r\nhello body\r\n"
	fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
		switch {
		case strings.HasPrefix(cmd, "SELECT "):
			return selectOK, reply
		case strings.HasPrefix(cmd, "FETCH "):
			return "* 1 FETCH (BODY[] {" + itoa(uint64(len(msg))) + "}\r\n" + msg + ")\r\n%[1]s OK done\r\n", reply
		}
		return "%[1]s BAD unexpected\r\n", reply
	}))
	rec := &recorder{}
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 5 * time.Second, Observer: rec}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SelectInbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bi, err := c.FetchBody(context.Background(), 1)
	wall := time.Since(start)
	if err != nil || bi.ID != "m1" || bi.BodySum != msgsum.BodySum([]byte("hello body\r\n")) {
		t.Fatalf("FetchBody = %+v, %v", bi, err)
	}
	o := rec.last(t)
	if o.Function != measure.IMAPFetchBody || o.Class != measure.OK {
		t.Fatalf("observation %+v", o)
	}
	if wall < hashTime || o.Duration >= hashTime || o.Duration > wall-hashTime {
		t.Errorf("FETCH took %v with %v of hashing; observed %v, want at most %v", wall, hashTime, o.Duration, wall-hashTime)
	}
}
