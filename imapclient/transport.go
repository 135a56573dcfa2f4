package imapclient

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync"
)

// maxTappedResponse bounds one server response held while an LSUB is being
// intercepted; a longer response fails the LSUB (and the connection).
const maxTappedResponse = 1 << 20

// errResponseTooLong is returned when an intercepted response exceeds maxTappedResponse.
var errResponseTooLong = errors.New("server response too long")

// transport is the net.Conn that go-imap's client reads from and writes to.
// It wraps the real connection (TCP or TLS) to
//   - remember the first I/O error, so a failed command can be classified as a
//     connection failure even though go-imap flattens its errors with %v;
//   - replay a greeting line before the stream (after a manual STARTTLS);
//   - intercept the responses of an LSUB command, which go-imap can neither
//     send nor parse: while a tap is active, `* LSUB` lines and the tagged
//     completion are consumed here, everything else passes through.
//
// The response splitter runs on every byte read so that a tap, once
// activated, starts at a response boundary. Read is called only by
// go-imap's reader goroutine; the other methods are safe for concurrent use.
type transport struct {
	net.Conn

	mu      sync.Mutex
	ioErr   error  // first read or write error
	out     []byte // bytes to hand to go-imap before reading again
	split   splitter
	tap     *lsubTap
	partial []byte        // the tap's incomplete response
	reading bool          // the reader waits in Conn.Read with nothing undelivered
	idleCh  chan struct{} // closed when reading becomes true (see readerIdle)
}

func newTransport(c net.Conn, prefix []byte) *transport {
	t := &transport{Conn: c}
	if len(prefix) > 0 {
		t.out = append([]byte(nil), prefix...)
	}
	return t
}

// err returns the first I/O error seen on the connection, or nil.
func (t *transport) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ioErr
}

func (t *transport) noteErr(err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	if t.ioErr == nil {
		t.ioErr = err
	}
	tap := t.tap
	t.tap = nil
	if t.idleCh != nil {
		close(t.idleCh)
		t.idleCh = nil
	}
	t.mu.Unlock()
	if tap != nil {
		tap.finish(err)
	}
}

// readerIdle returns a channel that is closed once go-imap's reader
// goroutine has consumed every byte received so far and waits for more (or
// the connection failed). By then go-imap has processed every response
// received so far, including its side effects (state, capabilities).
func (t *transport) readerIdle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reading || t.ioErr != nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if t.idleCh == nil {
		t.idleCh = make(chan struct{})
	}
	return t.idleCh
}

func (t *transport) Write(p []byte) (int, error) {
	n, err := t.Conn.Write(p)
	t.noteErr(err)
	return n, err
}

func (t *transport) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		t.mu.Lock()
		if len(t.out) > 0 {
			n := copy(p, t.out)
			t.out = t.out[n:]
			if len(t.out) == 0 {
				t.out = nil
			}
			t.mu.Unlock()
			return n, nil
		}
		t.reading = true
		if t.idleCh != nil {
			close(t.idleCh)
			t.idleCh = nil
		}
		t.mu.Unlock()

		n, err := t.Conn.Read(p)
		t.mu.Lock()
		t.reading = false
		t.mu.Unlock()
		if n > 0 {
			t.mu.Lock()
			midResponse := !t.split.atBoundary()
			ends := t.split.feed(p[:n])
			if t.tap == nil {
				t.mu.Unlock()
				return n, err
			}
			// A tap is active: pass the rest of a response that was already
			// under way, hand the remaining bytes to the tap.
			head := 0
			if midResponse && len(t.partial) == 0 {
				if len(ends) == 0 {
					t.mu.Unlock()
					return n, err
				}
				head = ends[0]
				ends = ends[1:]
			}
			tapErr := t.tapLocked(p[head:n], ends, head)
			t.mu.Unlock()
			if tapErr != nil {
				t.noteErr(tapErr)
				t.Conn.Close()
				return 0, tapErr
			}
			if err != nil {
				t.noteErr(err)
			}
			if head > 0 {
				return head, err
			}
			if err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			t.noteErr(err)
			return 0, err
		}
	}
}

// tapLocked consumes b (the bytes after a response boundary), whose complete
// responses end at the offsets ends (relative to b's parent, shifted by
// base). Called with t.mu held and t.tap non-nil.
func (t *transport) tapLocked(b []byte, ends []int, base int) error {
	start := 0
	for _, e := range ends {
		e -= base
		var resp []byte
		if len(t.partial) > 0 {
			resp = append(t.partial, b[start:e]...)
			t.partial = nil
		} else {
			resp = b[start:e]
		}
		start = e
		if t.tap == nil {
			t.out = append(t.out, resp...)
			continue
		}
		switch name, status, kind := t.tap.classify(resp); kind {
		case respLSUB:
			t.tap.names = append(t.tap.names, name)
		case respTagged:
			tap := t.tap
			t.tap = nil
			tap.finishStatus(status)
		default:
			t.out = append(t.out, resp...)
		}
	}
	rest := b[start:]
	if t.tap == nil {
		t.out = append(t.out, rest...)
		return nil
	}
	if len(t.partial)+len(rest) > maxTappedResponse {
		return errResponseTooLong
	}
	t.partial = append(t.partial, rest...)
	return nil
}

// startTap activates interception of responses tagged tag. It fails if a
// tap is already active or the connection has failed.
func (t *transport) startTap(tag string) (*lsubTap, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ioErr != nil {
		return nil, t.ioErr
	}
	if t.tap != nil {
		return nil, errors.New("imapclient: LSUB already in flight")
	}
	t.tap = &lsubTap{tag: tag, done: make(chan struct{})}
	return t.tap, nil
}

// readTap reads the connection until tap is done, for a client whose
// caller reads (go-imap is not reading meanwhile): the bytes that are not
// the tap's are kept, up to maxTappedResponse, for go-imap's next Read.
func (t *transport) readTap(tap *lsubTap) error {
	var buf [4096]byte
	for {
		select {
		case <-tap.done:
			return nil
		default:
		}
		n, err := t.Conn.Read(buf[:])
		if n > 0 {
			t.mu.Lock()
			midResponse := !t.split.atBoundary()
			ends := t.split.feed(buf[:n])
			head := 0
			if t.tap != nil && midResponse && len(t.partial) == 0 {
				// The rest of a response under way is go-imap's.
				head = n
				if len(ends) > 0 {
					head, ends = ends[0], ends[1:]
				}
				t.out = append(t.out, buf[:head]...)
			}
			var tapErr error
			if t.tap != nil {
				tapErr = t.tapLocked(buf[head:n], ends, head)
			} else {
				t.out = append(t.out, buf[head:n]...)
			}
			if tapErr == nil && len(t.out) > maxTappedResponse {
				tapErr = errResponseTooLong
			}
			t.mu.Unlock()
			if tapErr != nil {
				t.noteErr(tapErr)
				t.Conn.Close()
				return tapErr
			}
		}
		if err != nil {
			t.noteErr(err)
			return err
		}
	}
}

// stopTap abandons tap if it is still active (the caller gave up on it).
func (t *transport) stopTap(tap *lsubTap) {
	t.mu.Lock()
	if t.tap == tap {
		t.tap = nil
	}
	t.mu.Unlock()
}

// splitter finds the ends of IMAP server responses in a byte stream: a
// response is a line ending in LF, except that a line ending in "{n}" CRLF
// (a literal) continues after n bytes. It doesn't perform I/O.
type splitter struct {
	literal int64  // literal bytes still to skip
	midLine bool   // inside a line (some bytes of it seen)
	tail    []byte // the last bytes of the current line segment, up to tailCap
	ends    []int  // feed's result, reused: its caller is done with it by the next feed
}

const tailCap = 24 // enough for "{" + 20 digits + "}\r\n"

func (s *splitter) atBoundary() bool { return s.literal == 0 && !s.midLine }

// feed consumes b and returns the offsets just after each response end in
// b, in a slice that is valid until the next feed.
func (s *splitter) feed(b []byte) []int {
	ends := s.ends[:0]
	i := 0
	for i < len(b) {
		if s.literal > 0 {
			k := int64(len(b) - i)
			if k > s.literal {
				k = s.literal
			}
			i += int(k)
			s.literal -= k
			continue
		}
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			s.keepTail(b[i:])
			s.midLine = true
			break
		}
		s.keepTail(b[i : i+j+1])
		i += j + 1
		if n, ok := literalSuffix(s.tail); ok && n > 0 {
			s.literal = n
			s.midLine = true
		} else if ok {
			s.midLine = true // "{0}": the line continues right away
		} else {
			s.midLine = false
			ends = append(ends, i)
		}
		s.tail = s.tail[:0]
	}
	s.ends = ends
	return ends
}

func (s *splitter) keepTail(b []byte) {
	if len(b) >= tailCap {
		s.tail = append(s.tail[:0], b[len(b)-tailCap:]...)
		return
	}
	if over := len(s.tail) + len(b) - tailCap; over > 0 {
		s.tail = append(s.tail[:0], s.tail[over:]...)
	}
	s.tail = append(s.tail, b...)
}

// literalSuffix reports whether line ends in "{n}\r\n" (or "{n}\n") and returns n.
func literalSuffix(line []byte) (int64, bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) < 3 || line[len(line)-1] != '}' {
		return 0, false
	}
	open := bytes.LastIndexByte(line, '{')
	if open < 0 {
		return 0, false
	}
	digits := line[open+1 : len(line)-1]
	if len(digits) == 0 || len(digits) > 19 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
