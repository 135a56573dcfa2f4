// Package populate fills the mailboxes of a real server under test before a
// run (`mailbench init`) and removes what init and runs left there
// (`mailbench clean`), over IMAP.
//
// What a user's mailboxes hold is mailboxes.For and
// mailboxes.Messages: the same plan and the same messages as the
// embedded target starts with, reproducible from the config's seed.
package populate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/lib/ctxsleep"

	"golang.org/x/sync/errgroup"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// DefaultWorkers is how many users are populated at once when
// Options.Workers is zero.
const DefaultWorkers = 8

// DefaultProgressEvery is how often Options.Progress is told.
const DefaultProgressEvery = time.Second

// Options tunes Init and Clean. The zero value is valid.
type Options struct {
	// Workers is how many users are worked on at once, each over its own
	// IMAP connection. Zero means DefaultWorkers.
	Workers int
	// Progress, when set, is told how far the job has come every
	// ProgressEvery and once at its end (JobProgress.Final).
	Progress      func(JobProgress)
	ProgressEvery time.Duration
	// Users, when not nil, replaces cfg.LoadUsers(): work on these only.
	Users []workload.User
	// RetryPause is the wait before the first retry of an APPEND the
	// server refused for a temporary reason (imapclient.TemporaryRefusal), or of a
	// user whose connection was lost (resumable); it doubles for the next.
	// Zero means DefaultRetryPause.
	RetryPause time.Duration
}

// DefaultRetryPause is Options.RetryPause's default.
const DefaultRetryPause = time.Second

// appendRetries is how many times Init retries one APPEND that the server
// refused for a temporary reason before it gives up.
const appendRetries = 2

// putMessage appends msg, retrying a temporary refusal appendRetries times
// after pause, 2 × pause, ...: an APPEND that fails leaves the mailbox as
// it was (RFC 9051 6.3.12), so a retry never doubles a message. It returns
// how many retries it made.
func putMessage(ctx context.Context, c *imapclient.Client, mailbox string, msg []byte, t time.Time, pause time.Duration) (int, error) {
	for retry := 0; ; retry++ {
		err := c.PutMessage(ctx, mailbox, msg, nil, t)
		if err == nil || retry == appendRetries || !imapclient.TemporaryRefusal(err) {
			return retry, err
		}
		if !ctxsleep.Sleep(ctx, pause<<retry) {
			return retry, err
		}
	}
}

// Summary is what Init did.
type Summary struct {
	Users     int           // users populated
	Mailboxes int           // mailboxes checked (created when missing)
	Present   int64         // messages already there, not appended again
	Appended  int64         // messages appended
	Bytes     int64         // bytes appended
	Retried   int64         // APPENDs retried after a temporary refusal (imapclient.TemporaryRefusal)
	Resumed   int64         // users started again on a new connection (resumable)
	Duration  time.Duration // wall time of Init
}

// MessagesPerSecond is Appended over Duration (0 for a zero Duration).
func (s Summary) MessagesPerSecond() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return float64(s.Appended) / s.Duration.Seconds()
}

// String renders the summary on one line. It doesn't perform I/O.
func (s Summary) String() string {
	line := fmt.Sprintf("init: %d users, %d mailboxes, %d messages appended (%.1f MiB), %d already present, in %v: %.0f messages/s",
		s.Users, s.Mailboxes, s.Appended, float64(s.Bytes)/(1<<20), s.Present, s.Duration.Round(time.Millisecond), s.MessagesPerSecond())
	if s.Retried > 0 {
		line += "; " + count(s.Retried, "APPEND", "APPENDs") + " retried after the server's temporary refusal"
	}
	return line + resumedText(s.Resumed)
}

// count renders n with the singular or the plural noun: "1 APPEND".
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// resumedText is the summary's note of users started again, "" for none.
func resumedText(n int64) string {
	if n == 0 {
		return ""
	}
	return "; " + count(n, "user", "users") + " resumed on a new connection"
}

// CleanSummary is what Clean did.
type CleanSummary struct {
	Users          int           // users cleaned
	Expunged       int64         // messages removed
	FoldersDeleted int           // extra folders that existed before and not after (per user, summed): what was removed, not the DELETEs sent
	Resumed        int64         // users started again on a new connection (resumable)
	Duration       time.Duration // wall time of Clean
}

// String renders the summary on one line. It doesn't perform I/O.
func (s CleanSummary) String() string {
	line := fmt.Sprintf("clean: %d users, %d messages removed, %d folders deleted, in %v",
		s.Users, s.Expunged, s.FoldersDeleted, s.Duration.Round(time.Millisecond))
	return line + resumedText(s.Resumed)
}

// Init populates every user's mailboxes per the config's profile through
// IMAP APPEND, Options.Workers users at a time, one IMAP connection per
// user. It is idempotent: per mailbox it creates it when missing,
// subscribes it, reads its message count k (STATUS) and appends only
// messages k+1..n of the mailbox's reproducible sequence of n, so a second
// Init tops up and never doubles. Every operation has cfg.Load.OpTimeout
// as its deadline. The first failure stops the other workers; the summary
// then counts what was done. Errors name users by login, never with
// passwords. Safe for concurrent use (it shares no state between calls).
func Init(ctx context.Context, cfg *workload.Config, opts Options) (Summary, error) {
	start := time.Now()
	cfg, err := resolved(ctx, cfg)
	if err != nil {
		return Summary{}, err
	}
	j, err := newJob(cfg, opts)
	if err != nil {
		return Summary{}, err
	}
	var total int64
	for _, u := range j.users {
		for _, p := range mailboxes.For(cfg, u.Login) {
			total += int64(p.Messages)
		}
	}
	var sum struct {
		users, mailboxes            atomic.Int64
		present, appended, bytesOut atomic.Int64
		retried                     atomic.Int64
	}
	// checked holds the mailboxes whose count was taken, per user: a user
	// started again (forEachUser) counts them, and what they held, once.
	var checkedMu sync.Mutex
	checked := map[string]bool{}
	firstCheck := func(login, mailbox string) bool {
		checkedMu.Lock()
		defer checkedMu.Unlock()
		key := login + "\x00" + mailbox
		if checked[key] {
			return false
		}
		checked[key] = true
		return true
	}
	pr := newProgress(opts.Progress, "init", "messages", total, j.every)
	err = j.forEachUser(ctx, func(ctx context.Context, c *imapclient.Client, u workload.User) error {
		for _, p := range creationOrder(mailboxes.For(cfg, u.Login), cfg.Mailboxes.Delimiter) {
			if !strings.EqualFold(p.Mailbox, "INBOX") {
				if err := c.Create(ctx, p.Mailbox); err != nil {
					return fmt.Errorf("%s: create: %w", p.Mailbox, err)
				}
			}
			if err := c.Subscribe(ctx, p.Mailbox); err != nil {
				return fmt.Errorf("%s: subscribe: %w", p.Mailbox, err)
			}
			k, err := c.Status(ctx, p.Mailbox)
			if err != nil {
				return fmt.Errorf("%s: status: %w", p.Mailbox, err)
			}
			have := min(int(k), p.Messages)
			if firstCheck(u.Login, p.Mailbox) {
				sum.mailboxes.Add(1)
				sum.present.Add(int64(have))
				pr.Add(int64(have))
			}
			if have >= p.Messages {
				continue
			}
			i := 0
			err = mailboxes.Messages(cfg, j.gen, u.Login, u.Address, p.Mailbox, p.Messages, func(msg []byte, t time.Time) error {
				i++
				if i <= have {
					return nil
				}
				retries, err := putMessage(ctx, c, p.Mailbox, msg, t, j.pause)
				sum.retried.Add(int64(retries))
				if err != nil {
					return fmt.Errorf("%s: append message %d: %w", p.Mailbox, i, err)
				}
				sum.appended.Add(1)
				sum.bytesOut.Add(int64(len(msg)))
				pr.Add(1)
				return nil
			})
			if err != nil {
				return err
			}
		}
		sum.users.Add(1)
		return nil
	})
	pr.Finish(err == nil)
	return Summary{
		Users: int(sum.users.Load()), Mailboxes: int(sum.mailboxes.Load()),
		Present: sum.present.Load(), Appended: sum.appended.Load(), Bytes: sum.bytesOut.Load(),
		Retried: sum.retried.Load(), Resumed: j.resumed.Load(), Duration: time.Since(start),
	}, err
}

// Clean removes what Init and runs created: it empties every mailbox of
// each user's plan (STORE 1:* +FLAGS.SILENT (\Deleted), EXPUNGE) and
// deletes and unsubscribes the configured extra folders (cfg.Mailboxes.
// Folders), children first. INBOX, Sent, Drafts and Trash stay, empty. A
// mailbox that does not exist is skipped. Deadlines, workers and errors
// as for Init.
func Clean(ctx context.Context, cfg *workload.Config, opts Options) (CleanSummary, error) {
	start := time.Now()
	cfg, err := resolved(ctx, cfg)
	if err != nil {
		return CleanSummary{}, err
	}
	j, err := newJob(cfg, opts)
	if err != nil {
		return CleanSummary{}, err
	}
	folders := deletionOrder(cfg.Mailboxes.Folders, cfg.Mailboxes.Delimiter)
	var users, expunged, deleted atomic.Int64
	pr := newProgress(opts.Progress, "clean", "users", int64(len(j.users)), j.every)
	err = j.forEachUser(ctx, func(ctx context.Context, c *imapclient.Client, u workload.User) error {
		for _, p := range mailboxes.For(cfg, u.Login) {
			n, err := c.EmptyMailbox(ctx, p.Mailbox)
			if errors.Is(err, imapclient.ErrNoMailbox) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: empty: %w", p.Mailbox, err)
			}
			expunged.Add(int64(n))
		}
		// What was removed is counted from the server's listing before and
		// after, not from the DELETEs: servers answer OK to a DELETE of a
		// folder that does not exist, or a NO that DeleteMailbox forgives.
		before, err := c.ListMailboxes(ctx)
		if err != nil {
			return fmt.Errorf("list the folders: %w", err)
		}
		for _, f := range folders {
			if err := c.DeleteMailbox(ctx, f); err != nil {
				return fmt.Errorf("%s: delete: %w", f, err)
			}
			// Servers differ on whether DELETE unsubscribes; a NO here
			// (not subscribed) is fine, a connection failure is not.
			if err := c.Unsubscribe(ctx, f); err != nil && measure.Classify(err) != measure.Protocol {
				return fmt.Errorf("%s: unsubscribe: %w", f, err)
			}
		}
		after, err := c.ListMailboxes(ctx)
		if err != nil {
			return fmt.Errorf("list the folders: %w", err)
		}
		deleted.Add(int64(removed(folders, before, after)))
		users.Add(1)
		pr.Add(1)
		return nil
	})
	pr.Finish(err == nil)
	return CleanSummary{
		Users: int(users.Load()), Expunged: expunged.Load(), FoldersDeleted: int(deleted.Load()),
		Resumed: j.resumed.Load(), Duration: time.Since(start),
	}, err
}

// removed counts the folders that before lists and after does not. It
// doesn't perform I/O.
func removed(folders, before, after []string) int {
	n := 0
	for _, f := range folders {
		if slices.Contains(before, f) && !slices.Contains(after, f) {
			n++
		}
	}
	return n
}

// job is what Init and Clean share: the users, the IMAP settings and the
// worker pool.
type job struct {
	cfg     *workload.Config
	users   []workload.User
	imap    imapclient.Config
	gen     *message.Generator
	workers int
	every   time.Duration
	pause   time.Duration // before the first retry; doubles for the next
	resumed atomic.Int64  // users started again on a new connection
}

func newJob(cfg *workload.Config, opts Options) (*job, error) {
	if cfg.Target.Embedded {
		return nil, errors.New("the embedded target is populated when a run starts; init and clean work on a real server (target.embedded = false)")
	}
	users := opts.Users
	if users == nil {
		var err error
		if users, err = cfg.LoadUsers(); err != nil {
			return nil, err
		}
	}
	var sizes []int
	for _, s := range cfg.Messages.Sizes {
		sizes = append(sizes, int(s.Size))
	}
	gen, err := message.NewGenerator(cfg.Seed, sizes)
	if err != nil {
		return nil, err
	}
	eps, err := endpoints.For(cfg)
	if err != nil {
		return nil, err
	}
	j := &job{cfg: cfg, users: users, imap: eps.IMAP, gen: gen, workers: opts.Workers, every: opts.ProgressEvery}
	if j.workers <= 0 {
		j.workers = DefaultWorkers
	}
	if j.every <= 0 {
		j.every = DefaultProgressEvery
	}
	if j.pause = opts.RetryPause; j.pause <= 0 {
		j.pause = DefaultRetryPause
	}
	return j, nil
}

// forEachUser runs fn for every user over a fresh, logged-in connection,
// j.workers at a time, and logs out after. The first error cancels the
// rest and is returned, prefixed with the user's login.
func (j *job) forEachUser(parent context.Context, fn func(context.Context, *imapclient.Client, workload.User) error) error {
	g, ctx := errgroup.WithContext(parent)
	g.SetLimit(j.workers)
	for _, u := range j.users {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			for attempt := 0; ; attempt++ {
				err := j.onConnection(ctx, u, fn)
				if err != nil && attempt == userRetries && imapclient.TemporaryRefusal(err) {
					return fmt.Errorf("%w (refused %d times for a reason that may pass; if many users are refused at once, "+
						"the server is contended: try fewer --workers than %d)", err, attempt+1, j.workers)
				}
				if err == nil || attempt == userRetries || ctx.Err() != nil || !resumable(err) {
					return err
				}
				j.resumed.Add(1)
				if !ctxsleep.Sleep(ctx, j.pause<<attempt) {
					return err
				}
			}
		})
	}
	err := g.Wait()
	if err == nil {
		err = parent.Err()
	}
	return err
}

// onConnection runs fn for u over a connection of its own.
func (j *job) onConnection(ctx context.Context, u workload.User, fn func(context.Context, *imapclient.Client, workload.User) error) error {
	c, err := imapclient.Connect(ctx, j.imap, u.Login, u.Password)
	if err != nil {
		return fmt.Errorf("user %s: connect to %s: %w", u.Login, j.imap.Address, err)
	}
	defer c.Close()
	if err := fn(ctx, c, u); err != nil {
		return fmt.Errorf("user %s: %w", u.Login, err)
	}
	if err := c.Logout(ctx); err != nil {
		return fmt.Errorf("user %s: logout: %w", u.Login, err)
	}
	return nil
}

// userRetries is how many times a user's init or clean starts again, on
// a new connection, after a failure that may pass (resumable).
const userRetries = 2

// resumable reports whether a user's init or clean that failed with err
// may succeed on a new connection: the connection was lost (a server that
// closed it after refusing a command, or restarted), or the server refused
// a command for a reason that may pass (imapclient.TemporaryRefusal). Both are
// idempotent, so starting a user again does no work twice.
func resumable(err error) bool {
	return measure.Classify(err) == measure.Connection || imapclient.TemporaryRefusal(err)
}

// creationOrder returns plan with parents before children ("Projects"
// before "Projects/Alpha"), otherwise in plan order. It doesn't perform I/O.
func creationOrder(plan []mailboxes.Plan, delim string) []mailboxes.Plan {
	out := slices.Clone(plan)
	slices.SortStableFunc(out, func(a, b mailboxes.Plan) int {
		return cmp.Compare(depth(a.Mailbox, delim), depth(b.Mailbox, delim))
	})
	return out
}

// deletionOrder returns folders with children before parents. It doesn't
// perform I/O.
func deletionOrder(folders []string, delim string) []string {
	out := slices.Clone(folders)
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(depth(b, delim), depth(a, delim)) })
	return out
}

// depth is how many hierarchy levels deep mailbox is, delim being the
// server's hierarchy delimiter.
func depth(mailbox, delim string) int { return strings.Count(mailbox, delim) }

// resolved is ResolveNamespace for Init and Clean, which work on a real
// server only (newJob says so for the embedded target).
func resolved(ctx context.Context, cfg *workload.Config) (*workload.Config, error) {
	if cfg.Target.Embedded {
		return cfg, nil
	}
	out, _, err := endpoints.ResolveNamespace(ctx, cfg)
	return out, err
}
