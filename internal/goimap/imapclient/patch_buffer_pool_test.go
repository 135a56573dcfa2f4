package imapclient

// Tests for mailbench's buffer-pool.patch: Options.PoolBuffers takes a
// client's read and write buffers from pools, and ReleaseBuffers gives them
// back once the read loop has ended, leaving the client's own objects
// reading and writing net.ErrClosed. A pooled client answers as an
// unpooled one does (the same responses, read through a reused buffer that
// held another connection's bytes).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"

	imap "github.com/mailbench/mailbench/internal/goimap"
)

// poolServer answers LOGIN, SELECT, FETCH and LOGOUT as a server would,
// each response in one write; its FETCH returns three messages whose bodies
// name the connection (n), so that a buffer reused from another connection
// and read wrongly would show.
func poolServer(t *testing.T, n int) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); client.Close() })
	go func() {
		defer conn.Close()
		if _, err := io.WriteString(conn, "* OK [CAPABILITY IMAP4rev1] ready\r\n"); err != nil {
			return
		}
		br := bufio.NewReader(conn)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			tag, rest, _ := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
			verb, _, _ := strings.Cut(rest, " ")
			var reply string
			switch strings.ToUpper(verb) {
			case "LOGIN":
				reply = tag + " OK [CAPABILITY IMAP4rev1] logged in\r\n"
			case "SELECT":
				reply = "* 3 EXISTS\r\n* FLAGS (\\Seen)\r\n* OK [UIDVALIDITY 7] v\r\n" + tag + " OK [READ-WRITE] selected\r\n"
			case "FETCH":
				for i := 1; i <= 3; i++ {
					body := strings.Repeat(fmt.Sprintf("connection %d message %d\r\n", n, i), 40*i)
					reply += fmt.Sprintf("* %d FETCH (UID %d FLAGS (\\Seen) BODY[] {%d}\r\n%s)\r\n", i, 100*n+i, len(body), body)
				}
				reply += tag + " OK fetched\r\n"
			case "LOGOUT":
				io.WriteString(conn, "* BYE bye\r\n"+tag+" OK logged out\r\n")
				return
			default:
				reply = tag + " BAD unknown\r\n"
			}
			if _, err := io.WriteString(conn, reply); err != nil {
				return
			}
		}
	}()
	return client
}

// poolSession logs in, selects, fetches the three messages and logs out,
// and returns what it read.
func poolSession(conn net.Conn, options *Options) (*Client, []string, error) {
	c := New(conn, options)
	if err := c.Login("u", "p").Wait(); err != nil {
		return c, nil, err
	}
	mb, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		return c, nil, err
	}
	got := []string{fmt.Sprintf("exists %d uidvalidity %d", mb.NumMessages, mb.UIDValidity)}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2, 3), &imap.FetchOptions{UID: true, Flags: true, BodySection: []*imap.FetchItemBodySection{{}}}).Collect()
	if err != nil {
		return c, nil, err
	}
	for _, m := range msgs {
		got = append(got, fmt.Sprintf("%d uid %d flags %v body %q", m.SeqNum, m.UID, m.Flags, m.FindBodySection(&imap.FetchItemBodySection{})))
	}
	return c, got, c.Logout().Wait()
}

func TestPatchBufferPoolSameResponses(t *testing.T) {
	for n := range 6 {
		// Alternately pooled and not: every pooled session after the
		// first reads through the buffer the one before it released.
		want := func() []string {
			c, got, err := poolSession(poolServer(t, n), &Options{ReadInCaller: true, ReadBufferSize: 1024})
			if err != nil {
				t.Fatalf("connection %d, unpooled: %v", n, err)
			}
			c.Close()
			return got
		}()
		c, got, err := poolSession(poolServer(t, n), &Options{ReadInCaller: true, ReadBufferSize: 1024, PoolBuffers: true})
		if err != nil {
			t.Fatalf("connection %d, pooled: %v", n, err)
		}
		c.Close()
		c.ReleaseBuffers()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("connection %d: pooled client read\n%q\nunpooled\n%q", n, got, want)
		}
	}
}

func TestPatchBufferPoolRelease(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of what it is given")
	}
	// One P: what this goroutine puts in a sync.Pool it gets back. The
	// pools start empty (earlier tests gave them buffers).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	drainBufferPools()

	c, _, err := poolSession(poolServer(t, 1), &Options{ReadInCaller: true, ReadBufferSize: 2048, PoolBuffers: true})
	if err != nil {
		t.Fatal(err)
	}
	br, bw := c.br, c.bw
	c.ReleaseBuffers() // before Close: the read loop may still run
	if _, err := br.Peek(0); err != nil || br.Size() != 2048 {
		t.Fatalf("ReleaseBuffers before Close changed the reader: Peek %v, size %d", err, br.Size())
	}
	c.Close()
	c.ReleaseBuffers()
	c.ReleaseBuffers() // a second call gives nothing back again

	// The client's own objects now fail, whoever still holds them.
	// (net.ErrClosed itself: the closed TCP connection's errors only wrap it.)
	if _, err := br.ReadByte(); err != net.ErrClosed {
		t.Errorf("released reader: ReadByte error %v, want net.ErrClosed", err)
	}
	if _, err := bw.WriteString("T9 NOOP\r\n"); err != nil {
		t.Errorf("released writer: WriteString error %v, want it buffered", err)
	} else if err := bw.Flush(); err != net.ErrClosed {
		t.Errorf("released writer: Flush error %v, want net.ErrClosed", err)
	}

	// The pools hold one reader of the client's size and one writer, once.
	r, _ := readerPool.Get().(*bufio.Reader)
	w, _ := writerPool.Get().(*bufio.Writer)
	if r == nil || r.Size() != 2048 || r == br || r.Buffered() != 0 {
		t.Errorf("pooled reader %v: want a reader of 2048 bytes, empty, not the client's own", r)
	}
	if w == nil || w == bw || w.Buffered() != 0 {
		t.Errorf("pooled writer %v: want an empty writer, not the client's own", w)
	}
	if r2, _ := readerPool.Get().(*bufio.Reader); r2 != nil {
		t.Errorf("the pool holds a second reader after one client's release")
	}
	// Given back, a pooled client of that size takes them.
	readerPool.Put(r)
	writerPool.Put(w)
	d := New(poolServer(t, 2), &Options{ReadInCaller: true, ReadBufferSize: 2048, PoolBuffers: true})
	if d.br != r || d.bw != w {
		t.Errorf("a new pooled client did not take the pooled buffers")
	}
	// Another size is not taken.
	readerPool.Put(New(poolServer(t, 3), &Options{ReadBufferSize: 512}).br)
	e := New(poolServer(t, 4), &Options{ReadInCaller: true, ReadBufferSize: 2048, PoolBuffers: true})
	if e.br.Size() != 2048 {
		t.Errorf("a pooled client of 2048 bytes took a reader of %d", e.br.Size())
	}
	d.Close()
	e.Close()
}

func TestPatchBufferPoolNotPooled(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops a quarter of what it is given")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	drainBufferPools()
	c, _, err := poolSession(poolServer(t, 1), &Options{ReadInCaller: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	br := c.br
	c.ReleaseBuffers()
	if c.br != br || br.Size() != 4096 {
		t.Fatal("ReleaseBuffers changed a client created without PoolBuffers")
	}
	if _, err := br.ReadByte(); err == net.ErrClosed {
		t.Error("the reader of a client without PoolBuffers was released")
	}
	if r := readerPool.Get(); r != nil {
		t.Error("a client without PoolBuffers gave a reader to the pool")
	}
}

// drainBufferPools empties both pools.
func drainBufferPools() {
	for readerPool.Get() != nil {
	}
	for writerPool.Get() != nil {
	}
}
