// Package memnet is an in-memory network for tests: listeners and dialers
// joined by buffered in-memory pipes, so that a whole run (clients, embedded target, sink)
// can execute inside a testing/synctest bubble, where a real socket would
// not let the fake clock advance. It is for tests only.
package memnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// Network is a set of listeners by address. The zero value is not usable;
// use New. It is safe for concurrent use.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*listener
	next      int
}

// New returns an empty network.
func New() *Network { return &Network{listeners: map[string]*listener{}} }

// Addr is an address on a Network.
type Addr string

func (Addr) Network() string  { return "mem" }
func (a Addr) String() string { return string(a) }

// Listen returns a listener at address addr; an address ending in ":0"
// gets a fresh one. Its signature fits net.ListenConfig users.
func (n *Network) Listen(ctx context.Context, network, addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(addr) >= 2 && addr[len(addr)-2:] == ":0" {
		n.next++
		addr = fmt.Sprintf("%s%d", addr[:len(addr)-1], 10000+n.next)
	}
	if _, dup := n.listeners[addr]; dup {
		return nil, fmt.Errorf("memnet: listen %s: address in use", addr)
	}
	l := &listener{n: n, addr: Addr(addr), conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// DialContext connects to the listener at address; its signature fits
// net.Dialer.DialContext.
func (n *Network) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[address]
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: Addr(address), Err: errors.New("connection refused")}
	}
	client, server := pipe(Addr("client"), l.addr)
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: Addr(address), Err: errors.New("connection refused")}
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type listener struct {
	n     *Network
	addr  Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.n.mu.Lock()
		delete(l.n.listeners, string(l.addr))
		l.n.mu.Unlock()
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }
