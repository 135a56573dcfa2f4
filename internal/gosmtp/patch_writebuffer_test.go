package smtp

// Test of mailbench's write-buffer.patch: a client whose write buffer was
// grown (GrowWriteBuffer) writes exactly the bytes a client with go-smtp's
// 4 KiB buffer writes, and a message that fits the grown buffer goes out,
// with its final ".", in one write.

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptConn answers a client from a script of replies read ahead, and
// records every Write.
type scriptConn struct {
	replies *strings.Reader
	writes  [][]byte
}

func (c *scriptConn) Read(p []byte) (int, error) { return c.replies.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// sendScripted sends body as one message and returns the writes after
// DATA's (the body and its final ".") and all the bytes written.
func sendScripted(t *testing.T, body []byte, grow int) (bodyWrites int, all []byte) {
	return sendScriptedWith(t, body, grow, (*DataCommand).Write)
}

// sendScriptedWith is sendScripted with write giving the DATA writer body.
func sendScriptedWith(t *testing.T, body []byte, grow int, write func(*DataCommand, []byte) (int, error)) (bodyWrites int, all []byte) {
	t.Helper()
	conn := &scriptConn{replies: strings.NewReader("220 hi\r\n250-x\r\n250 SIZE\r\n250 ok\r\n250 ok\r\n354 go\r\n250 queued\r\n221 bye\r\n")}
	c := NewClient(conn)
	if err := c.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("a@x.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("b@x.test", nil); err != nil {
		t.Fatal(err)
	}
	if grow > 0 {
		c.GrowWriteBuffer(grow)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	dataAt := len(conn.writes)
	if _, err := write(w, body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bodyWrites = len(conn.writes) - dataAt
	if err := c.Quit(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return bodyWrites, bytes.Join(conn.writes, nil)
}

func TestPatchWriteBufferSameBytesFewerWrites(t *testing.T) {
	for _, size := range []int{10, 4000, 5120, 20000, 300000} {
		body := bytes.Repeat([]byte("a line of the body, .dotted\r\n.x\r\n"), size/33+1)[:size]
		plainWrites, plain := sendScripted(t, body, 0)
		grownWrites, grown := sendScripted(t, body, size+size/32+16)
		if !bytes.Equal(plain, grown) {
			t.Fatalf("size %d: a grown buffer changed the bytes written", size)
		}
		want := 1
		if size+size/32+16 > maxWriteBuffer {
			want = (size + maxWriteBuffer) / maxWriteBuffer // pieces of maxWriteBuffer
		}
		if grownWrites > want {
			t.Errorf("size %d: the body went out in %d writes with a grown buffer (%d without), want at most %d", size, grownWrites, plainWrites, want)
		}
		if size > 4096 && plainWrites < 2 {
			t.Errorf("size %d: %d writes without the patch: the test does not see 4 KiB pieces", size, plainWrites)
		}
	}
}
