package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
)

// relayJob is one accepted message still owed to some remote recipients.
type relayJob struct {
	from  string
	rcpts []string
	msg   []byte
}

// relayer delivers remote mail to one address from a bounded in-memory
// queue, like an MTA's outgoing queue: accept first, deliver later. Its
// methods are safe for concurrent use.
type relayer struct {
	addr       string
	heloName   string
	timeout    time.Duration
	attempts   int
	retryDelay time.Duration
	relayed    *atomic.Int64
	failed     *atomic.Int64

	queue   chan *relayJob
	pending atomic.Int64 // jobs enqueued and not finished

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRelayer(t *Target, o Options) *relayer {
	ctx, cancel := context.WithCancel(context.Background())
	r := &relayer{
		addr:       o.RelayAddr,
		heloName:   o.LocalDomain,
		timeout:    o.OpTimeout,
		attempts:   o.RelayAttempts,
		retryDelay: o.RelayRetryDelay,
		relayed:    &t.counters.relayed,
		failed:     &t.counters.relayFailed,
		queue:      make(chan *relayJob, o.RelayQueueSize),
		ctx:        ctx,
		cancel:     cancel,
	}
	r.wg.Add(o.RelayWorkers)
	for range o.RelayWorkers {
		go r.work()
	}
	return r
}

// tryEnqueue queues job without blocking and reports whether there was room.
func (r *relayer) tryEnqueue(job *relayJob) bool {
	if r.ctx.Err() != nil {
		return false
	}
	r.pending.Add(1)
	select {
	case r.queue <- job:
		return true
	default:
		r.pending.Add(-1)
		return false
	}
}

func (r *relayer) work() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case job := <-r.queue:
			r.process(job)
			r.pending.Add(-1)
		}
	}
}

// stop cancels the workers (interrupting connections in flight), waits for
// them at most wait, and counts every recipient still queued as failed.
func (r *relayer) stop(wait time.Duration) error {
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		return fmt.Errorf("target: relay workers did not stop within %v", wait)
	}
	for {
		select {
		case job := <-r.queue:
			r.failed.Add(int64(len(job.rcpts)))
			r.pending.Add(-1)
		default:
			return nil
		}
	}
}

// process tries job's recipients up to r.attempts times, pausing between
// attempts; recipients refused permanently (5xx) are not retried.
func (r *relayer) process(job *relayJob) {
	rcpts := job.rcpts
	for attempt := 1; ; attempt++ {
		accepted, permanent, temporary := r.attempt(job.from, rcpts, job.msg)
		r.relayed.Add(int64(accepted))
		r.failed.Add(int64(permanent))
		if len(temporary) == 0 {
			return
		}
		if attempt >= r.attempts {
			r.failed.Add(int64(len(temporary)))
			return
		}
		timer := time.NewTimer(time.Duration(attempt) * r.retryDelay)
		select {
		case <-r.ctx.Done():
			timer.Stop()
			r.failed.Add(int64(len(temporary)))
			return
		case <-timer.C:
		}
		rcpts = temporary
	}
}

// attempt runs one SMTP transaction with the relay address. It returns how
// many recipients were accepted and permanently refused, and the recipients
// to try again. Every dial and command is bounded by r.timeout, and
// cancelling r.ctx closes the connection.
func (r *relayer) attempt(from string, rcpts []string, msg []byte) (accepted, permanent int, temporary []string) {
	all := func(err error) (int, int, []string) {
		if isPermanent(err) {
			return 0, len(rcpts), nil
		}
		return 0, 0, rcpts
	}
	dialer := net.Dialer{Timeout: r.timeout}
	conn, err := dialer.DialContext(r.ctx, "tcp", r.addr)
	if err != nil {
		return all(err)
	}
	stop := context.AfterFunc(r.ctx, func() { conn.Close() })
	defer stop()
	c := smtp.NewClient(conn)
	c.CommandTimeout = r.timeout
	c.SubmissionTimeout = r.timeout
	defer c.Close()

	if err := c.Hello(r.heloName); err != nil {
		return all(err)
	}
	if err := c.Mail(from, nil); err != nil {
		return all(err)
	}
	var ok []string
	for i, rcpt := range rcpts {
		err := c.Rcpt(rcpt, nil)
		switch {
		case err == nil:
			ok = append(ok, rcpt)
		case isPermanent(err):
			permanent++
		case isSMTPError(err):
			temporary = append(temporary, rcpt)
		default: // the connection broke: retry the rest, and those accepted so far
			return 0, permanent, append(append(ok, temporary...), rcpts[i:]...)
		}
	}
	if len(ok) == 0 {
		c.Quit()
		return 0, permanent, temporary
	}
	// From here on a failure applies to every accepted recipient.
	fail := func(err error) (int, int, []string) {
		if isPermanent(err) {
			return 0, permanent + len(ok), temporary
		}
		return 0, permanent, append(temporary, ok...)
	}
	w, err := c.Data()
	if err != nil {
		return fail(err)
	}
	if _, err := w.Write(msg); err != nil {
		w.Close()
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	c.Quit() // the message is accepted whatever QUIT answers
	return len(ok), permanent, temporary
}

func isSMTPError(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se)
}

// isPermanent reports whether err is an SMTP 5xx reply.
func isPermanent(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code >= 500 && se.Code < 600
}
