package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/internal/run/session"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// ShardOptions make a run one shard of a run that several load generators
// carry out together (docs/distributed.md).
type ShardOptions struct {
	// Shard is this generator's share: arrivals k and users u with
	// k, u mod Count = Index (schedule.Shard). Zero: the whole run.
	Shard schedule.Shard
	// StartAt, when set, is the run's Window.Start, common to all shards
	// (warm-up begins then; arrivals are timed from it). It also fixes the
	// run id every shard derives (session.ShardRunID). Zero: now.
	StartAt time.Time
	// ExternalSink: the server under test relays remote mail to a sink in
	// another process (`mailbench sink --json`). No sink is started; the
	// remote deliveries are recorded as pending in the report, to be
	// reconciled with `mailbench report --sink`, instead of lost.
	ExternalSink bool
	// Target, when set, is an embedded target already running (shards run
	// in one process against one server: tests). The run starts neither a
	// target nor a sink and implies ExternalSink.
	Target *demo.Target
}

func (o ShardOptions) externalSink() bool { return o.ExternalSink || o.Target != nil }

// sinkConfig is cfg with the sink disabled when it is external.
func (o ShardOptions) sinkConfig(cfg *workload.Config) *workload.Config {
	if !o.externalSink() || !cfg.Sink.Enabled {
		return cfg
	}
	c := *cfg
	c.Sink.Enabled = false
	return &c
}

func (o ShardOptions) start() time.Time {
	if o.StartAt.IsZero() {
		return time.Now()
	}
	return o.StartAt
}

// runID is the run's message-id run id: from the seed and the common start
// when the run is a shard or has a fixed start, else from the clock.
func (o ShardOptions) runID(cfg *workload.Config, win workload.Window) uint32 {
	if o.Shard.Whole() && o.StartAt.IsZero() {
		return session.NewRunID()
	}
	return session.ShardRunID(cfg.Seed, win.Start, o.Shard)
}

func (o ShardOptions) reconcile(led *delivery.Ledger) (delivery.Reconciliation, *delivery.Pending) {
	if o.externalSink() {
		return led.ReconcileExternal()
	}
	return led.Reconcile(), nil
}

// shardReport marks run as o's shard of the run.
func (o ShardOptions) shardReport(cfg *workload.Config, run *report.Run, runID uint32, win workload.Window, pending *delivery.Pending) {
	if pending != nil && len(pending.Deliveries) > 0 {
		run.RemotePending = pending
		run.Warnings = append(run.Warnings, fmt.Sprintf("%d remote deliveries await reconciliation against the external sink's record (mailbench report --sink)", len(pending.Deliveries)))
	}
	if o.Shard.Whole() && o.StartAt.IsZero() && !o.externalSink() {
		return
	}
	sh := o.Shard
	if sh.Whole() {
		sh = schedule.Shard{Index: 0, Count: 1}
	}
	run.Shard = &report.ShardInfo{Index: sh.Index, Count: sh.Count, RunID: runID, ConfigHash: ConfigHash(cfg),
		StartAt: win.Start, ExternalSink: o.externalSink()}
}

// ConfigHash is the SHA-256 (hex) of the effective workload config, file
// path and the users' password aside: shards of one run must have run the
// same workload, wherever each found its password, and a report must not
// carry a digest to test password guesses against.
func ConfigHash(cfg *workload.Config) string {
	c := *cfg
	c.File, c.Users.Password = "", ""
	b, err := json.Marshal(&c)
	if err != nil {
		b = fmt.Appendf(nil, "%#v", c)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// StartSink starts the sink of cfg's [sink] on its listen address (its
// TLS and limits) for a run whose shards leave it their remote mail (the
// manager's), calling onMessage on every arrival. It returns nil when
// sink.enabled is false.
func StartSink(cfg *workload.Config, onMessage func(delivery.Arrival)) (*smtpsink.Sink, error) {
	s, _, err := startSink(cfg, nil, nil, onMessage)
	return s, err
}

// StartDemoTarget starts mailbench's demo target on its own (plaintext
// IMAP on imapAddr, SMTP on smtpAddr), holding cfg's users with the
// mailboxes a run of cfg against the embedded target would find, and
// relaying mail for other domains to relayAddr: one server for several
// generators, or the target in another process than the load. Close it
// when done.
func StartDemoTarget(cfg *workload.Config, imapAddr, smtpAddr, relayAddr string) (*demo.Target, error) {
	users, err := cfg.LoadUsers()
	if err != nil {
		return nil, usageErr(err)
	}
	sizes := cfg.MessageSizes() // messages.sizes and the user profiles' own
	gen, err := message.NewGenerator(cfg.Seed, sizes)
	if err != nil {
		return nil, err
	}
	tu := make([]workload.User, len(users))
	for i, u := range users {
		tu[i] = workload.User{Login: u.Login, Password: u.Password, Address: u.Address}
	}
	tg, err := demo.Start(context.Background(), demo.Options{
		Users: tu, LocalDomain: cfg.Users.LocalDomain, Folders: embeddedFolders(cfg),
		Populate: mailboxes.Func(cfg, gen), RelayAddr: relayAddr, OpTimeout: cfg.Load.OpTimeout.Duration,
		IMAPAddr: imapAddr, SMTPAddr: smtpAddr, RelayTLS: demo.RelayOpportunisticTLS,
	})
	if err != nil {
		return nil, &RunError{fmt.Errorf("demo target: %w", err)}
	}
	return tg, nil
}
