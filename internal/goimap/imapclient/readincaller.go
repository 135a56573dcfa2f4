package imapclient

import (
	"bytes"
	"iter"
	"runtime"
	"time"
)

// mailbench patch (caller-reads.patch): Options.ReadInCaller.
//
// Upstream reads every response in a goroutine of its own (Client.read) and
// hands it to the goroutine waiting for it through a channel: two wake-ups
// per response (the poller wakes the reader, the reader wakes the waiter)
// and, with a second idle P, a futex to wake another thread. With
// ReadInCaller the same read loop runs as a coroutine (iter.Pull) that the
// waiting goroutine resumes for one response at a time: the waiter reads,
// and a switch between it and the coroutine does not go through the
// scheduler. Wherever the read loop would block on a consumer (a full
// channel, a literal that the consumer has not finished reading) it yields
// instead, and the caller resumes it once it has taken what it waited for.
//
// The coroutine is driven by at most one goroutine at a time (pumpMu). A
// goroutine that waits for a value first takes pumpMu and looks for its
// value, and only resumes the read loop when it is not there yet, so that
// nobody reads a response past the one it waits for. Idle starts a
// background goroutine that drives the read loop from then on (unilateral
// data arrives without a command to wait for).

// readInCaller reports whether responses are read by their waiters.
func (c *Client) readInCaller() bool {
	return c.pull != nil && !c.background.Load()
}

// startReadInCaller sets up the read loop as a coroutine. Called by New
// instead of starting the reader goroutine.
func (c *Client) startReadInCaller() {
	c.pull, _ = iter.Pull(func(yield func(struct{}) bool) {
		growReadStack()
		c.yield = yield
		c.read()
	})
}

// growReadStack grows the read loop's stack, while it is shallow, to the
// size the read loop needs. mailbench patch (read-stack.patch): a new
// coroutine's stack starts at 2 KiB and the decoder's calls grew it to
// 8 KiB on every connection, each growth copying a deeper stack (the
// runtime walks every frame to move it). Grown here, one copy of one
// frame. Stack growth fell from 1.8% to 1.1% of bench/imapcost's user
// time; a 16 or 32 KiB start saved no more, so 8 KiB is what the read
// loop uses and this costs no memory it would not take anyway.
//
//go:noinline
func growReadStack() {
	var pad [readStackPad]byte
	touchStack(pad[:])
}

// readStackPad is growReadStack's frame: with the runtime's guard, the
// stack grows to 8 KiB at once.
const readStackPad = 5 << 10

//go:noinline
func touchStack(b []byte) {
	b[len(b)-1] = 0
}

// pumpLocked resumes the read loop for one response. It returns false once
// the read loop has ended (decCh is then closed). c.pumpMu must be held.
func (c *Client) pumpLocked() bool {
	if c.readEnded {
		return false
	}
	if c.consumerWaits > 0 {
		// The read loop is waiting for a consumer to take a value or
		// finish a literal: let it run before resuming the loop again.
		c.pumpMu.Unlock()
		if c.consumerWaits > 16 {
			time.Sleep(50 * time.Microsecond)
		} else {
			runtime.Gosched()
		}
		c.pumpMu.Lock()
		if c.readEnded {
			return false
		}
	}
	if _, ok := c.pull(); !ok {
		c.readEnded = true
		return false
	}
	return true
}

// pumpUntil resumes the read loop until ready reports true or the loop has
// ended; ready is called with c.pumpMu held.
func (c *Client) pumpUntil(ready func() bool) {
	for {
		c.pumpMu.Lock()
		if ready() {
			c.pumpMu.Unlock()
			return
		}
		ok := c.pumpLocked()
		c.pumpMu.Unlock()
		if !ok {
			return
		}
	}
}

// readInBackground hands the read loop to a goroutine that drives it until
// it ends; from then on waiters block on their channels as upstream's do.
func (c *Client) readInBackground() {
	if c.pull == nil || c.background.Swap(true) {
		return
	}
	go c.pumpUntil(func() bool { return false })
}

// resultsCap is the capacity of a command's result channel (FETCH's
// messages, LIST's mailboxes, EXPUNGE's numbers): upstream's when a
// goroutine reads, 16 when the waiter reads (it takes them as they come; a
// full channel makes the read loop yield, not fail). A FETCH made a channel
// of 128 slots per command. mailbench patch (command-costs.patch).
func (c *Client) resultsCap(upstream int) int {
	if c.pull != nil {
		return min(16, upstream)
	}
	return upstream
}

// recv receives from ch. With ReadInCaller it resumes the read loop until
// a value (or the channel's close) has arrived.
func recv[T any](c *Client, ch <-chan T) (T, bool) {
	if c == nil || !c.readInCaller() {
		v, ok := <-ch
		return v, ok
	}
	var (
		v     T
		ok    bool
		ready bool
	)
	c.pumpUntil(func() bool {
		select {
		case v, ok = <-ch:
			ready = true
		default:
		}
		return ready
	})
	if !ready {
		// The read loop has ended: every pending command has been
		// completed and its channels closed or filled.
		v, ok = <-ch
	}
	return v, ok
}

// send sends v on ch from the read loop. In the coroutine a full channel
// yields to the caller instead of blocking it.
func send[T any](c *Client, ch chan<- T, v T) {
	if c.yield == nil {
		ch <- v
		return
	}
	for {
		select {
		case ch <- v:
			c.consumerWaits = 0
			return
		default:
		}
		c.consumerWaits++
		if !c.yield(struct{}{}) {
			ch <- v
			return
		}
	}
}

// awaitConsumer waits, in the read loop, until done is closed (the consumer
// has read a literal to its end). In the coroutine it yields meanwhile.
func (c *Client) awaitConsumer(done <-chan struct{}) {
	if c.yield == nil {
		<-done
		return
	}
	for {
		select {
		case <-done:
			c.consumerWaits = 0
			return
		default:
		}
		c.consumerWaits++
		if !c.yield(struct{}{}) {
			<-done
			return
		}
	}
}

// readOnInCaller reports whether the read loop, run as a coroutine, should
// read the next response before it yields: after untagged data (nobody's
// command has completed), when the next response's first line is already
// in the read buffer, so that reading it starts without waiting on the
// network (a literal the line announces may still be on its way: the
// server is in the middle of sending it).
// mailbench patch (read-batch.patch): a SELECT's untagged data or a LIST's
// mailboxes arrive in one read; yielding after each response cost two
// coroutine switches per response, and the caller, resumed, only resumed
// the loop again. A tagged response (a command's end) and a
// continuation request still yield at once, so that nothing is read past a
// completion that its caller waits for, and so does a message decoded in
// place (NextInto): its caller must take it before the next one is
// decoded into the same buffer.
func (c *Client) readOnInCaller() bool {
	if !c.readOn {
		return false
	}
	n := c.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}
