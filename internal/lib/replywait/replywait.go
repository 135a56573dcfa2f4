//go:build unix

// Package replywait makes a request-reply client's reads wait in the
// runtime's poller for the reply instead of first failing: a write is held
// until the next read, and sent from inside that read after the poller has
// been armed, so the read waits for readiness at once.
//
// Why: Go's net.Conn.Read tries the read system call before it waits
// (internal/poll resets the descriptor's readiness, reads, and only on
// EAGAIN parks the goroutine). A client that writes a command and then
// reads its reply nearly always finds nothing there yet: one read system
// call per reply that fails by design. SMTP submission kept alive makes
// four such replies per message (MAIL, RCPT, DATA, the end of data), about
// half of its reads (docs/performance.md, issue 37, twentieth round).
//
// Waiting first is safe only when the readiness was reset before the
// reply could arrive: the poller is edge-triggered, and a reply that
// arrived between a plain Write and the reset would wait for the read
// deadline. syscall.RawConn.Read resets the readiness and then calls its
// function; the held write goes out from there, so every byte of the reply
// arrives after the reset.
//
// Data that arrives while the client is not reading (IMAP's untagged
// EXISTS between commands, an SMTP server's 421) loses its readiness to
// the reset, and would be read only with the reply to the next command:
// its observation delayed by that command's service time. So a read waits
// first only when a read found the socket drained at most MaxQuiet before
// (a client running command after command); after a longer quiet, or a
// read that filled its buffer, the held write goes out as a plain write
// and the read reads first, as net.TCPConn does. What arrives within
// MaxQuiet of a drained read is read with the next reply.
//
// Nothing else changes: bytes go out in the order written and before any
// read that follows them returns; Close sends what is held if the socket
// takes it at once (a client closes after its last reply). A write that would
// block, or one made while a read is in progress (IMAP's DONE while IDLE
// is read in another goroutine), goes out as a plain Write. The errors are
// the ones net.TCPConn gives ("write tcp ...", "read tcp ...", io.EOF,
// os.ErrDeadlineExceeded).
package replywait

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// MaxHeld is the largest write held for the next read; a larger one goes
// out at once. A command or a message of a few KiB fits; the kernel's
// socket buffer takes it without blocking.
const MaxHeld = 16 << 10

// MaxQuiet is how long after a read that drained the socket the next read
// may still wait first (see the package doc).
const MaxQuiet = time.Millisecond

// heldBuffers keeps the hold buffers between a write and the read that
// sends it: a connection per message (SMTP submission reconnecting)
// would otherwise allocate one and grow it to the message's size every
// time, and an idle connection keep one.
var heldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, MaxHeld); return &b }}

// Conn is a TCP connection whose writes are held for the next read. A
// Read and a Write may run at once (a Write during a Read goes out at
// once), Close may run at any time; two Writes must not run at once.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	mu sync.Mutex
	// wmu orders what goes out: a Read holds it while it sends what was
	// held, a Write that goes out at once while it writes, so a Write
	// made during a Read cannot overtake the bytes held before it. A
	// Read takes it only with something held, when no Write is in
	// progress (Writes don't run at once, and one in progress holds
	// nothing), so a Read never waits on a blocked Write.
	wmu     sync.Mutex
	hold    *[]byte // from heldBuffers while something is held or being sent
	held    []byte  // written, not sent: (*hold)[:len]
	reading bool    // a Read is in progress: writes go out at once
	writing bool    // a Write sends at once (and may be sending held bytes)
	closed  bool

	// The state of the Read in progress, for readStep (a method value
	// made once, so a Read allocates nothing).
	readStep func(fd uintptr) bool
	toSend   []byte
	buf      []byte
	n        int
	readErr  error
	sendErr  error
	wmuHeld  bool // the Read in progress holds wmu: its send is not done

	// drainedAt is when the last read returned less than its buffer (the
	// socket was drained then), on sinceStart's clock; drained is false
	// after a read that filled it, or an error. Only Read uses them.
	drainedAt time.Duration
	drained   bool

	beforeSend func() // tests: runs in a Read after it took what was held
	emptyReads int    // read system calls that found nothing (for tests)
	waitedFor  int    // reads made after waiting first (for tests)
	partSent   int    // held writes the socket took only in part (for tests)
}

// Wrap returns c wrapped, or c itself when it is not a *net.TCPConn (a
// pipe in tests, a custom transport). It doesn't perform I/O.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	w := &Conn{TCPConn: tc, rc: rc}
	w.readStep = w.step
	return w
}

// NetConn returns the TCP connection under c (quickack finds its socket
// through it).
func (c *Conn) NetConn() net.Conn { return c.TCPConn }

// Write holds p for the next Read when it is small and no Read is in
// progress; otherwise it sends what is held and p at once.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.reading && !c.closed && len(c.held)+len(p) <= MaxHeld {
		if c.hold == nil {
			c.hold = heldBuffers.Get().(*[]byte)
			c.held = (*c.hold)[:0]
		}
		c.held = append(c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	return c.sendNow(p)
}

// sendNow sends what is held, then p, as plain writes, in order after
// what a Read in progress sends (wmu).
func (c *Conn) sendNow(p []byte) (int, error) {
	c.mu.Lock()
	held := c.takeHeld()
	c.writing = true
	c.mu.Unlock()
	defer c.endWrite()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(held) > 0 {
		if _, err := c.TCPConn.Write(held); err != nil {
			return 0, err
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	return c.TCPConn.Write(p)
}

// takeHeld returns the held bytes and empties the hold, keeping its
// buffer: the caller sends them with reading or writing set, which keeps
// the buffer from being held into again or pooled meanwhile. c.mu is held.
func (c *Conn) takeHeld() []byte {
	h := c.held
	c.held = c.held[:0]
	return h
}

func (c *Conn) endWrite() {
	c.mu.Lock()
	c.writing = false
	c.releaseHold()
	c.mu.Unlock()
}

// releaseHold gives the hold's buffer back to the pool once what it held
// is sent and nothing sends from it: a connection holds a buffer only
// from a write to the read that sends it, not while it idles (a logged-in
// idle session would otherwise keep MaxHeld bytes). c.mu is held.
func (c *Conn) releaseHold() {
	if c.hold == nil || len(c.held) > 0 || c.reading || c.writing {
		return
	}
	*c.hold = (*c.hold)[:0]
	heldBuffers.Put(c.hold)
	c.hold, c.held = nil, nil
}

// Read sends what is held and reads. With something held, the read waits
// for readiness before its first read system call.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return c.TCPConn.Read(p) // reads nothing: what is held stays held
	}
	c.mu.Lock()
	c.reading = true
	held := c.takeHeld()
	if len(held) > 0 {
		c.wmu.Lock() // free: see wmu
	}
	c.mu.Unlock()
	defer c.endRead()
	if len(held) > 0 && (!c.drained || sinceStart()-c.drainedAt > MaxQuiet) {
		// Something may have arrived unread: send as a plain write, and
		// read first.
		_, err := c.TCPConn.Write(held)
		c.wmu.Unlock()
		if err != nil {
			return 0, err
		}
		held = nil
	}
	if len(held) == 0 {
		n, err := c.TCPConn.Read(p)
		c.noteRead(n, len(p), err)
		return n, err
	}
	if c.beforeSend != nil {
		c.beforeSend()
	}
	c.toSend, c.buf, c.n, c.readErr, c.sendErr, c.wmuHeld = held, p, 0, nil, nil, true
	n, err := c.waitFirst()
	c.noteRead(n, len(p), err)
	return n, err
}

// noteRead keeps when a read of size bytes last drained the socket.
func (c *Conn) noteRead(n, size int, err error) {
	c.drained = err == nil && n < size
	if c.drained {
		c.drainedAt = sinceStart()
	}
}

// clockStart is sinceStart's origin.
var clockStart = time.Now()

// sinceStart reads the monotonic clock only: one clock read where
// time.Now makes two (wall and monotonic), twice per reply.
func sinceStart() time.Duration { return time.Since(clockStart) }

// waitFirst sends c.toSend and reads into c.buf after waiting, through
// rc.Read and step; c.wmu is held (c.wmuHeld).
func (c *Conn) waitFirst() (int, error) {
	p := c.buf
	err := c.rc.Read(c.readStep)
	rest, n, readErr, sendErr := c.toSend, c.n, c.readErr, c.sendErr
	c.toSend, c.buf, c.readErr, c.sendErr = nil, nil, nil, nil
	if c.wmuHeld && len(rest) > 0 && err == nil && sendErr == nil {
		// The socket took part of the write: the rest goes out as a plain
		// write (under the write deadline), still in order, and the read
		// is a plain read.
		c.partSent++
		_, werr := c.TCPConn.Write(rest)
		c.sendDone()
		if werr != nil {
			return 0, werr
		}
		return c.TCPConn.Read(p)
	}
	if c.wmuHeld {
		c.sendDone() // the send failed, or never began
	}
	switch {
	case sendErr != nil:
		return 0, c.opError("write", sendErr)
	case err != nil:
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err // rc.Read's "raw-read" wrapping, replaced below
		}
		if len(rest) > 0 {
			return 0, c.opError("write", err)
		}
		return 0, c.opError("read", err)
	case readErr != nil:
		return n, c.opError("read", readErr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// sendDone ends a Read's send: later writes may go out.
func (c *Conn) sendDone() {
	c.wmuHeld = false
	c.wmu.Unlock()
}

func (c *Conn) endRead() {
	c.mu.Lock()
	c.reading = false
	c.releaseHold()
	c.mu.Unlock()
}

// step is rc.Read's function: first it sends what is held (the poller is
// armed by then) and asks to wait; then it reads. true ends rc.Read.
func (c *Conn) step(fd uintptr) bool {
	for len(c.toSend) > 0 {
		n, err := syscall.Write(int(fd), c.toSend)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // the rest goes out as a plain write
		case err != nil:
			c.sendErr = os.NewSyscallError("write", err)
			return true
		}
		c.toSend = c.toSend[n:]
		if len(c.toSend) == 0 {
			c.sendDone()
			return false // sent: wait for the reply
		}
	}
	for {
		n, err := syscall.Read(int(fd), c.buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			c.emptyReads++
			return false
		case err != nil:
			c.readErr = os.NewSyscallError("read", err)
			return true
		}
		c.n = n
		c.waitedFor++
		return true
	}
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// Close sends what is held, if the socket takes it at once, and closes.
func (c *Conn) Close() error {
	c.mu.Lock()
	held, hold := c.held, c.hold
	reuse := !c.reading && !c.writing // nothing else sends from the buffer
	c.held, c.hold, c.closed = nil, nil, true
	c.mu.Unlock()
	if len(held) > 0 {
		_ = c.rc.Write(func(fd uintptr) bool {
			_, _ = syscall.Write(int(fd), held)
			return true
		})
	}
	err := c.TCPConn.Close()
	if hold != nil && reuse {
		*hold = (*hold)[:0]
		heldBuffers.Put(hold)
	}
	return err
}

// CloseWrite sends what is held, then shuts the writing side down.
func (c *Conn) CloseWrite() error {
	if err := c.flush(); err != nil {
		return err
	}
	return c.TCPConn.CloseWrite()
}

// ReadFrom and WriteTo of the embedded *net.TCPConn would go around the
// hold; these keep the order.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.TCPConn.ReadFrom(r)
}

func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.TCPConn.WriteTo(w)
}

// flush sends what is held as a plain write.
func (c *Conn) flush() error {
	_, err := c.sendNow(nil)
	return err
}
