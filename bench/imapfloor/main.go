// Command imapfloor measures the least CPU a Go program spends on the
// comparable IMAP session of bench/imaptest-vs-mailbench: the same nine
// commands, byte for byte what mailbench's client sends, against the same
// Dovecot, with no parsing beyond finding each response's end (and the
// EXISTS count SELECT returns). It is an experiment, not a client: it
// checks no reply beyond its tagged OK, times nothing and keeps nothing.
//
// Two ways of waiting are measured (issue 37, docs/performance.md "Issue
// 37, eighth round"):
//
//	-mode goroutine   a goroutine per connection on net.Conn: Go's netpoller
//	                  parks and wakes the goroutine at every response, as
//	                  mailbench's client does
//	-mode loop        one goroutine, one epoll instance, a state machine per
//	                  connection: imaptest's model
//
// The difference between the two is what Go's scheduler costs per session
// on this workload; the difference between -mode goroutine and
// bench/imapcost -types session is what parsing and mailbench's client add.
//
//	go run ./bench/imapfloor -mode loop -sessions 2000
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mailbench/mailbench/internal/lib/runtimetune"
)

var rawWait = flag.Bool("raw-wait", false, "loop: wait in epoll_wait without telling Go's runtime (5 ms at most: a stop-the-world waits that long)")

const fetchItems = `(UID FLAGS INTERNALDATE RFC822.SIZE ENVELOPE BODY.PEEK[HEADER.FIELDS ("From" "To" "Subject" "Date" "Message-Id" "X-Mailbench-Id" "X-Mailbench-Sent")])`

type bench struct {
	addr     netip.AddrPort
	user     string
	password string
	size     int
	seq      atomic.Int64
}

// message renders a message of about b.size bytes, shaped like the
// generator's (headers, then body lines of 72 characters).
func (b *bench) message(user string) []byte {
	n := b.seq.Add(1)
	var m bytes.Buffer
	fmt.Fprintf(&m, "Date: %s\r\nFrom: imapfloor@example.test\r\nTo: %s@example.test\r\nSubject: imapfloor %d\r\nMessage-Id: <imapfloor-%d-%d@mailbench>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n",
		time.Now().Format(time.RFC1123Z), user, n, os.Getpid(), n)
	for m.Len() < b.size-74 {
		m.WriteString("The quick brown fox jumps over the lazy dog, again and again, and again.\r\n")
	}
	return m.Bytes()
}

// script renders one session's commands, LOGIN to LOGOUT; SELECT's
// EXISTS count fills in the FETCHes, so each is rendered when it is due.
type script struct {
	b      *bench
	user   string
	exists int
	msg    []byte
}

// next returns command k (1-based) of the session, "" after the last.
func (s *script) next(k int) []byte {
	tag := "T" + strconv.Itoa(k) + " "
	switch k {
	case 1:
		return []byte(tag + `LOGIN "` + s.user + `" "` + s.b.password + "\"\r\n")
	case 2:
		return []byte(tag + "LIST \"\" \"*\"\r\n")
	case 3:
		return []byte(tag + "SELECT INBOX\r\n")
	case 4:
		return []byte(fmt.Sprintf("%sFETCH %d:%d %s\r\n", tag, s.exists-19, s.exists, fetchItems))
	case 5:
		return []byte(fmt.Sprintf("%sFETCH %d (BODY[])\r\n", tag, s.exists))
	case 6:
		return []byte(tag + "STORE 1 +FLAGS.SILENT (\\Deleted)\r\n")
	case 7:
		return []byte(tag + "EXPUNGE\r\n")
	case 8:
		cmd := []byte(fmt.Sprintf("%sAPPEND INBOX {%d+}\r\n", tag, len(s.msg)))
		cmd = append(cmd, s.msg...)
		return append(cmd, "\r\n"...)
	case 9:
		return []byte(tag + "LOGOUT\r\n")
	}
	return nil
}

// literalSize returns n when line ends in "{n}\r\n". Written here rather
// than taken from imapclient (its splitter and literalSuffix): the floor
// must not run any of the client code it is the baseline for.
func literalSize(line []byte) (int, bool) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) < 3 || line[len(line)-1] != '}' {
		return 0, false
	}
	open := bytes.LastIndexByte(line, '{')
	if open < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(bytes.TrimSuffix(line[open+1:len(line)-1], []byte("+"))))
	return n, err == nil
}

// existsOf returns n of "* n EXISTS".
func existsOf(line []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("* "))
	if !ok {
		return 0, false
	}
	num, tail, ok := bytes.Cut(rest, []byte(" "))
	if !ok || !bytes.HasPrefix(tail, []byte("EXISTS")) {
		return 0, false
	}
	n, err := strconv.Atoi(string(num))
	return n, err == nil
}

// completes reports whether line is command k's tagged response, and
// whether that is OK.
func completes(line []byte, k int) (done, ok bool) {
	tag := "T" + strconv.Itoa(k) + " "
	if !bytes.HasPrefix(line, []byte(tag)) {
		return false, false
	}
	return true, bytes.HasPrefix(line[len(tag):], []byte("OK"))
}

// goroutineSession runs one session on its own connection.
func (b *bench) goroutineSession(user string, msg []byte) error {
	c, err := net.Dial("tcp", b.addr.String())
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReaderSize(c, 16<<10)
	if _, err := r.ReadSlice('\n'); err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	s := &script{b: b, user: user, msg: msg}
	for k := 1; k <= 9; k++ {
		if _, err := c.Write(s.next(k)); err != nil {
			return err
		}
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return fmt.Errorf("command %d: %w", k, err)
			}
			if n, ok := literalSize(line); ok {
				if _, err := r.Discard(n); err != nil {
					return err
				}
				continue
			}
			if n, ok := existsOf(line); ok {
				s.exists = n
			}
			if done, ok := completes(line, k); done {
				if !ok {
					return fmt.Errorf("command %d: %s", k, line)
				}
				break
			}
		}
	}
	return nil
}

// loopConn is one connection's state in the event loop.
type loopConn struct {
	fd      int
	client  int
	s       script
	k       int    // the command awaited (0: the greeting)
	line    []byte // the current line so far
	literal int    // literal bytes still to skip
}

// feed consumes bytes read; it returns true when the session is over.
func (lc *loopConn) feed(p []byte) (bool, error) {
	for len(p) > 0 {
		if lc.literal > 0 {
			n := min(lc.literal, len(p))
			lc.literal -= n
			p = p[n:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			lc.line = append(lc.line, p...)
			return false, nil
		}
		line := p[:i+1]
		if len(lc.line) > 0 {
			lc.line = append(lc.line, line...)
			line = lc.line
		}
		p = p[i+1:]
		over, err := lc.onLine(line)
		lc.line = lc.line[:0]
		if over || err != nil {
			return over, err
		}
	}
	return false, nil
}

func (lc *loopConn) onLine(line []byte) (bool, error) {
	if n, ok := literalSize(line); ok {
		lc.literal = n
		return false, nil
	}
	if lc.k == 0 { // the greeting
		return false, lc.send()
	}
	if n, ok := existsOf(line); ok {
		lc.s.exists = n
	}
	done, ok := completes(line, lc.k)
	if !done {
		return false, nil
	}
	if !ok {
		return false, fmt.Errorf("command %d: %s", lc.k, line)
	}
	if lc.k == 9 {
		return true, nil
	}
	return false, lc.send()
}

func (lc *loopConn) send() error {
	lc.k++
	cmd := lc.s.next(lc.k)
	for len(cmd) > 0 {
		n, err := syscall.Write(lc.fd, cmd)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write: %w", err) // EAGAIN included: a command is at most ~4 KiB
		}
		cmd = cmd[n:]
	}
	return nil
}

// loop runs sessions sessions on clients connections at a time, in this
// goroutine, with one epoll instance.
func (b *bench) loop(clients, sessions int, msgs func(user string) []byte) error {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer syscall.Close(ep)
	conns := map[int]*loopConn{}
	started := 0
	start := func(client int) error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		sa := &syscall.SockaddrInet4{Port: int(b.addr.Port()), Addr: b.addr.Addr().As4()}
		if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINPROGRESS {
			syscall.Close(fd)
			return err
		}
		user := fmt.Sprintf(b.user, client+1)
		lc := &loopConn{fd: fd, client: client, s: script{b: b, user: user, msg: msgs(user)}}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}); err != nil {
			syscall.Close(fd)
			return err
		}
		conns[fd] = lc
		started++
		return nil
	}
	for c := range min(clients, sessions) {
		if err := start(c); err != nil {
			return err
		}
	}
	events := make([]syscall.EpollEvent, 64)
	buf := make([]byte, 64<<10)
	for len(conns) > 0 {
		var n int
		if *rawWait {
			r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 5, 0, 0)
			if e == syscall.EINTR {
				continue
			}
			if e != 0 {
				return e
			}
			n = int(r)
		} else {
			var err error
			n, err = syscall.EpollWait(ep, events, -1)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return err
			}
		}
		for _, ev := range events[:n] {
			lc := conns[int(ev.Fd)]
			if lc == nil {
				continue
			}
			r, err := syscall.Read(lc.fd, buf)
			if err == syscall.EAGAIN || err == syscall.EINTR {
				continue
			}
			if err == nil && r == 0 {
				err = io.ErrUnexpectedEOF
			}
			over := false
			if err == nil {
				over, err = lc.feed(buf[:r])
			}
			if err != nil {
				return fmt.Errorf("%s, command %d: %w", lc.s.user, lc.k, err)
			}
			if over {
				syscall.Close(lc.fd) // removes it from the epoll set
				delete(conns, lc.fd)
				if started < sessions {
					if err := start(lc.client); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	addr := flag.String("addr", "127.0.0.1:1143", "IMAP server `host:port` (IPv4)")
	user := flag.String("user", "user%d", "login pattern, %d is 1..clients")
	clients := flag.Int("clients", 10, "concurrent sessions")
	sessions := flag.Int("sessions", 2000, "sessions measured")
	size := flag.Int("size", 4096, "APPEND message size")
	mode := flag.String("mode", "loop", "goroutine or loop")
	// As mailbench does: measure the runtime as it ships (internal/lib/runtimetune).
	runtimetune.Apply()
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("imapfloor: ")
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || !ap.Addr().Is4() {
		log.Fatalf("-addr wants an IPv4 host:port: %q", *addr)
	}
	password := os.Getenv("MAILBENCH_PASSWORD")
	if password == "" {
		password = "mailbench"
	}
	b := &bench{addr: ap, user: *user, password: password, size: *size}
	// Messages rendered before measuring, as bench/imapcost does.
	msgs := make([][]byte, *sessions)
	users := make([]string, *sessions)
	for i := range msgs {
		users[i] = fmt.Sprintf(*user, i%*clients+1)
		msgs[i] = b.message(users[i])
	}
	var next atomic.Int64
	take := func(string) []byte { return msgs[next.Add(1)-1] }

	cpu0, wall0 := cpuNow(), time.Now()
	switch *mode {
	case "loop":
		err = b.loop(*clients, *sessions, take)
	case "goroutine":
		var wg sync.WaitGroup
		errs := make([]error, *clients)
		for c := range *clients {
			wg.Go(func() {
				u := fmt.Sprintf(*user, c+1)
				for next.Load() < int64(*sessions) {
					i := next.Add(1) - 1
					if i >= int64(*sessions) {
						return
					}
					if err := b.goroutineSession(u, msgs[i]); err != nil {
						errs[c] = err
						return
					}
				}
			})
		}
		wg.Wait()
		err = errors.Join(errs...)
	default:
		log.Fatalf("-mode: %q (want goroutine or loop)", *mode)
	}
	cpu, wall := cpuNow()-cpu0, time.Since(wall0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("mode=%s sessions=%d clients=%d cpu=%.2fs wall=%.1fs %.1f us/session\n",
		*mode, *sessions, *clients, cpu.Seconds(), wall.Seconds(), float64(cpu.Microseconds())/float64(*sessions))
}
