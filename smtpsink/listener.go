package smtpsink

import (
	"crypto/tls"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// refusalTimeout bounds the whole exchange with a refused connection: the
// TLS handshake for implicit TLS, the 421 reply and the lingering close.
const refusalTimeout = 5 * time.Second

// limitListener counts and tracks the connections it hands out and refuses
// those beyond the sink's MaxConnections with a 421 reply. With implicit TLS
// it wraps each connection in a TLS server (the handshake happens later,
// under go-smtp's deadlines). Safe for concurrent use.
type limitListener struct {
	net.Listener
	s        *Sink
	max      int
	implicit *tls.Config
	refusal  []byte
	// evictReply goes to a connection closed to make room (idlestLocked).
	evictReply []byte

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newLimitListener(ln net.Listener, s *Sink, implicit *tls.Config) *limitListener {
	return &limitListener{
		Listener:   ln,
		s:          s,
		max:        s.opts.MaxConnections,
		implicit:   implicit,
		refusal:    []byte("421 4.3.2 " + s.opts.Domain + " Too many connections, try again later\r\n"),
		evictReply: []byte("421 4.4.2 " + s.opts.Domain + " Idle too long while the sink is full, closing\r\n"),
		conns:      make(map[*trackedConn]struct{}),
	}
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return nil, net.ErrClosed
		}
		if l.max > 0 && len(l.conns) >= l.max {
			victim := l.idlestLocked(time.Now())
			if victim == nil {
				l.mu.Unlock()
				l.s.refused.Add(1)
				go l.refuse(c)
				continue
			}
			// The connection that has sent nothing for longest makes
			// room: a crowd of clients that trickle a byte now and then
			// (slowloris) cannot keep out one that is sending mail.
			delete(l.conns, victim)
			l.s.active.Add(-1)
			l.s.evicted.Add(1)
			go victim.evict(l.evictReply)
		}
		tc := &trackedConn{Conn: c, l: l}
		tc.lastRead.Store(time.Now().UnixNano())
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		if d := l.s.opts.ReadTimeout; d > 0 && d == l.s.opts.WriteTimeout {
			// Both deadlines at once, here on the accepting goroutine:
			// the runtime keeps one timer for equal read and write
			// deadlines, and go-smtp's first SetWriteDeadline (the
			// greeting) and SetReadDeadline (the first command), a few
			// µs later, are then within coarse's slack and skipped. Two
			// timer updates per connection become one, and the
			// connection's goroutine no longer grows its stack for them.
			tc.SetDeadline(time.Now().Add(d))
		}
		l.s.connections.Add(1)
		l.s.active.Add(1)
		if l.implicit != nil {
			return tls.Server(tc, l.implicit), nil
		}
		return tc, nil
	}
}

// refuse sends the 421 reply and closes c without resetting it, so that the
// client reads the reply. Bounded by refusalTimeout.
func (l *limitListener) refuse(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refusalTimeout))
	var w net.Conn = c
	if l.implicit != nil {
		tc := tls.Server(c, l.implicit)
		if tc.Handshake() != nil {
			return
		}
		w = tc
	}
	if _, err := w.Write(l.refusal); err != nil {
		return
	}
	if tc, ok := w.(*tls.Conn); ok {
		tc.CloseWrite()
	} else if tcp, ok := c.(*net.TCPConn); ok {
		tcp.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(w, 64<<10)) // until the client closes
}

// closeAll closes every tracked connection and refuses later ones.
func (l *limitListener) closeAll() {
	l.mu.Lock()
	l.closed = true
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (l *limitListener) release(c *trackedConn) {
	l.mu.Lock()
	_, ok := l.conns[c]
	delete(l.conns, c)
	l.mu.Unlock()
	if ok {
		l.s.active.Add(-1)
	}
}

// minIdleToEvict is how long a connection must have sent nothing before a
// new one may take its place when the sink is full: a client between two
// commands is idle for milliseconds, a slowloris for seconds.
const minIdleToEvict = time.Second

// idlestLocked returns the tracked connection that has read nothing for
// longest, if that is at least minIdleToEvict; nil otherwise. Callers hold
// l.mu. O(connections), on the path of a sink that is full only.
func (l *limitListener) idlestLocked(now time.Time) *trackedConn {
	var idlest *trackedConn
	oldest := now.Add(-minIdleToEvict).UnixNano()
	for c := range l.conns {
		if t := c.lastRead.Load(); t <= oldest {
			idlest, oldest = c, t
		}
	}
	return idlest
}

// evict tells the client why and closes the connection; its serving
// goroutine then ends on the closed socket. The connection is no longer
// counted (Accept removed it).
func (c *trackedConn) evict(reply []byte) {
	c.mu.Lock()
	if c.werr == nil {
		c.Conn.SetWriteDeadline(time.Now().Add(refusalTimeout))
		c.Conn.Write(reply)
	}
	c.mu.Unlock()
	c.Conn.Close()
}

// maxPendingWrite is how many reply bytes a connection holds before it
// writes them even though it has not read since.
const maxPendingWrite = 16 << 10

// trackedConn leaves the listener's set when closed. It also coalesces
// writes: replies are held until the connection reads again (or holds
// maxPendingWrite bytes, or closes), so that go-smtp's one write per reply
// line (eight for the EHLO reply) and the replies to pipelined commands go
// out in one write. A client waits for replies only after it has sent
// everything it may send without them, so the server then reads, and the
// read writes the held replies first: nothing is held while the peer waits.
type trackedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once

	mu      sync.Mutex // held by Write, flush and Close: closeAll closes from another goroutine
	pending []byte     // pendingBuf[:n] until it grows beyond it
	werr    error      // the first failed write; later writes fail with it

	// Read-ahead, touched only by the goroutine that serves the connection
	// (go-smtp reads from one goroutine): ahead[aheadOff:] is data read
	// from the socket and not yet returned. The buffer comes from
	// aheadPool and goes back as soon as it is empty, so an idle
	// connection holds none.
	ahead    *[]byte
	aheadOff int
	aheadEnd int
	rerr     error // a read timeout, final (noteReadErr)

	// onReply: the functions waiting for their reply to be out
	// (afterReply), oldest first. Under mu.
	onReply []replyWait

	// readDL and writeDL are the deadlines last set on the socket (see
	// coarse); only the serving goroutine sets deadlines.
	readDL, writeDL time.Time

	// lastRead is when the client last sent something (unix ns); read by
	// Accept's idlestLocked from another goroutine.
	lastRead atomic.Int64

	// pendingBuf holds the replies of a usual exchange (the EHLO reply is
	// about 150 bytes) without an allocation per connection.
	pendingBuf [256]byte
}

// readAheadSize is the read-ahead buffer: go-smtp reads through a 4 KiB
// bufio.Reader, so a 5 KiB message took two read system calls; one read
// into 32 KiB takes what the peer has sent (the message, the next command).
const readAheadSize = 32 << 10

var aheadPool = sync.Pool{New: func() any { b := make([]byte, readAheadSize); return &b }}

// deadlineSlackDiv bounds how much earlier than asked a deadline may fire:
// go-smtp sets the read deadline before every command line and the write
// deadline before every reply, smtpsink the read deadline before every read
// of message data, each a timer update in the runtime. A new deadline t that
// is later than the one already set by less than (t − now)/deadlineSlackDiv
// is not applied, so a timeout fires after at least 63/64 of the time asked
// (59 s of the default 60 s) and a deadline is applied about once per
// second instead of several times per message.
const deadlineSlackDiv = 64

// coarse reports whether the deadline t may be skipped given the deadline
// set is set.
func coarse(t, set time.Time) bool {
	if t.IsZero() || set.IsZero() || t.Before(set) {
		return false
	}
	return t.Sub(set) < time.Until(t)/deadlineSlackDiv
}

func (c *trackedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.werr != nil {
		c.mu.Unlock()
		return 0, c.werr
	}
	for i := range c.onReply {
		c.onReply[i].replied = true
	}
	if len(c.pending)+len(p) > maxPendingWrite {
		if err := c.flushLocked(); err != nil {
			c.mu.Unlock()
			return 0, err
		}
		if len(p) > maxPendingWrite {
			n, err := c.Conn.Write(p)
			if err != nil {
				c.werr = err
			}
			fire := c.repliedLocked()
			c.mu.Unlock()
			fire()
			return n, err
		}
	}
	if c.pending == nil {
		c.pending = c.pendingBuf[:0]
	}
	c.pending = append(c.pending, p...)
	c.mu.Unlock()
	return len(p), nil
}

// afterReply has f called once the reply that the server writes next is
// out on the socket: written without error, not only held in pending. The
// sink counts a message there, not when its data is read: a client that
// never got the 250 sends the message again, and that is not a duplicate.
// f is dropped if the connection fails or is closed before.
//
// Pipelined messages queue one function each, in order; the queue holds
// at most the messages of one read-ahead buffer.
func (c *trackedConn) afterReply(f func()) {
	c.mu.Lock()
	c.onReply = append(c.onReply, replyWait{f: f})
	c.mu.Unlock()
}

// replyWait is a function waiting for a reply to be out (afterReply);
// replied: the server has written since it was queued.
type replyWait struct {
	f       func()
	replied bool
}

// repliedLocked returns what is due now: the afterReply functions whose
// reply was written, when nothing is held in pending and no write failed
// (a no-op when none). Callers hold c.mu and call the result after
// unlocking.
func (c *trackedConn) repliedLocked() func() {
	if len(c.onReply) == 0 || c.werr != nil || len(c.pending) > 0 {
		return func() {}
	}
	n := 0
	for n < len(c.onReply) && c.onReply[n].replied {
		n++
	}
	if n == 0 {
		return func() {}
	}
	due := slices.Clone(c.onReply[:n])
	c.onReply = append(c.onReply[:0], c.onReply[n:]...)
	return func() {
		for _, w := range due {
			w.f()
		}
	}
}

// flushLocked writes the held bytes, under the write deadline that go-smtp
// set before it wrote them.
func (c *trackedConn) flushLocked() error {
	if c.werr != nil || len(c.pending) == 0 {
		return c.werr
	}
	_, err := c.Conn.Write(c.pending)
	c.pending = c.pending[:0]
	if cap(c.pending) > maxPendingWrite {
		c.pending = nil
	}
	if err != nil {
		c.werr = err
	}
	return err
}

func (c *trackedConn) Read(p []byte) (int, error) {
	if c.ahead != nil {
		return c.readAhead(p), nil
	}
	if c.rerr != nil {
		return 0, c.rerr
	}
	c.mu.Lock()
	err := c.flushLocked()
	fire := c.repliedLocked()
	c.mu.Unlock()
	fire()
	if err != nil {
		return 0, err
	}
	if len(p) >= readAheadSize {
		n, err := c.Conn.Read(p)
		if n > 0 {
			c.lastRead.Store(time.Now().UnixNano())
		}
		c.noteReadErr(err)
		return n, err
	}
	bp := aheadPool.Get().(*[]byte)
	n, err := c.Conn.Read(*bp)
	c.noteReadErr(err)
	if n == 0 {
		aheadPool.Put(bp)
		return 0, err
	}
	c.lastRead.Store(time.Now().UnixNano())
	c.ahead, c.aheadOff, c.aheadEnd = bp, 0, n
	// A read error comes back on the next Read, after the data: the socket
	// reports it again.
	return c.readAhead(p), nil
}

// noteReadErr makes a read timeout final: every later Read returns it at
// once. Without it the timeout is lost behind a partial line (bufio's
// ReadLine returns the bytes read so far as a line, without the error),
// go-smtp takes that line for a command, answers "Bad command" and sets a
// new deadline for the next line: a client that trickles a byte now and
// then got a fresh timeout per error, four timeouts in all.
func (c *trackedConn) noteReadErr(err error) {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.rerr = err
	}
}

// readAhead returns buffered data and releases the buffer once it is empty.
func (c *trackedConn) readAhead(p []byte) int {
	n := copy(p, (*c.ahead)[c.aheadOff:c.aheadEnd])
	c.aheadOff += n
	if c.aheadOff == c.aheadEnd {
		aheadPool.Put(c.ahead)
		c.ahead = nil
	}
	return n
}

// SetReadDeadline applies t unless coarse says it may be skipped.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if coarse(t, c.readDL) {
		return nil
	}
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	c.readDL = t
	return nil
}

// SetWriteDeadline applies t unless coarse says it may be skipped.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	if coarse(t, c.writeDL) {
		return nil
	}
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	c.writeDL = t
	return nil
}

// SetDeadline sets both deadlines.
func (c *trackedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetDeadline(t); err != nil {
		return err
	}
	c.readDL, c.writeDL = t, t
	return nil
}

// Close writes the held replies (the 221 to QUIT, say) unless the sink is
// closing every connection at once (Close), and closes the connection. A
// Close from another goroutine closes at once: it does not wait for a write
// stuck on a peer that doesn't read.
func (c *trackedConn) Close() error {
	if !c.l.s.closingNow() {
		c.mu.Lock()
		c.flushLocked()
		fire := c.repliedLocked()
		c.mu.Unlock()
		fire()
	}
	err := c.Conn.Close()
	c.mu.Lock()
	c.werr = net.ErrClosed
	c.pending = nil
	c.mu.Unlock()
	c.once.Do(func() { c.l.release(c) })
	return err
}
