package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/atomicfile"
	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// RunShardFunc carries out one shard of a step: shard of cfg with its
// window starting at startAt and its remote mail left to the manager's
// sink. Cancelling stop ends its arrivals (it drains and reports
// partial); cancelling kill cuts it.
type RunShardFunc func(stop, kill context.Context, cfg *workload.Config, shard schedule.Shard, startAt time.Time) (*report.Run, error)

// GeneratorOptions are a generator's settings (mailbench run --manager).
type GeneratorOptions struct {
	// Manager is the manager's address: host:port or an http:// URL.
	Manager string
	Token   string
	Version string
	// Host names this generator in the manager's messages.
	Host string
	// Index asks for a shard (JOB_COMPLETION_INDEX); -1: any.
	Index int
	// Base is the generator's own config (its password is used, and its
	// file's directory resolves relative paths); nil: the manager's
	// config, with the password from users.password_env.
	Base *workload.Config
	// RunShard carries out each step.
	RunShard RunShardFunc
	// BeatEvery is the heartbeat interval during a step (default 5s);
	// ManagerLost how long the manager may be unreachable before the
	// generator gives up (default 2m).
	BeatEvery, ManagerLost time.Duration
	// HTTP is the client (default: one with a 60 s timeout per request).
	HTTP *http.Client
	Log  io.Writer
	// KeepDir is where a shard's report goes when the manager cannot take
	// it (default: the working directory).
	KeepDir string
}

// Refused is the manager's refusal of a request (4xx): retrying does not
// help.
type Refused struct {
	Status int
	Why    string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("the manager refused: %s (HTTP %d)", e.Why, e.Status)
}

// Outcome is how a generator's part ended.
type Outcome struct {
	Steps   int    // steps it reported
	Verdict string // the manager's last word ("" when it did not give one)
	// Partial: this generator was stopped (a signal) and reported what it
	// had.
	Partial bool
}

type client struct {
	o    GeneratorOptions
	base string // URL without trailing slash
	id   string
}

// Serve is a generator's life under a manager: it registers (retrying
// while the manager cannot be reached), checks its clock against the
// manager's, then carries out each step the manager gives until the end.
// stop (a first signal) ends the current step's arrivals; its partial
// report is still sent, and no further step is taken. A step that cannot
// be carried out is reported to the manager as a failure and ends Serve
// with the error.
func Serve(stop, kill context.Context, o GeneratorOptions) (Outcome, error) {
	if o.BeatEvery <= 0 {
		o.BeatEvery = 5 * time.Second
	}
	if o.ManagerLost <= 0 {
		o.ManagerLost = 2 * time.Minute
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 60 * time.Second}
	}
	base, err := ManagerURL(o.Manager)
	if err != nil {
		return Outcome{}, err
	}
	c := &client{o: o, base: base}
	var out Outcome
	hello := Hello{Version: o.Version, Host: o.Host, Index: o.Index}
	if o.Base != nil {
		if hello.ConfigHash, err = ConfigDigest(o.Base); err != nil {
			return out, err
		}
	}
	var welcome Welcome
	var sent, received time.Time
	err = c.retry(kill, "register", func() error {
		sent = time.Now()
		err := c.do(kill, http.MethodPost, RegisterPath, hello, &welcome)
		received = time.Now()
		return err
	})
	if err != nil {
		return out, err
	}
	c.id = welcome.ID
	c.logf("registered with %s as shard %d/%d", c.base, welcome.Index, welcome.Count)
	// The manager's clock read at the midpoint of the round trip, within
	// half the round trip.
	rtt := received.Sub(sent)
	offset := welcome.ManagerTime.Sub(sent.Add(rtt / 2))
	if abs(offset) > welcome.MaxClockOffset+rtt/2 {
		why := fmt.Sprintf("its clock is %v from the manager's (round trip %v), more than the %v allowed: synchronise the clocks (NTP, docs/distributed.md)",
			offset.Round(time.Millisecond), rtt.Round(time.Millisecond), welcome.MaxClockOffset)
		c.failStep(kill, 0, why)
		return out, errors.New(why)
	}
	last := 0
	for {
		var step Step
		// Between steps a stop (a signal) ends the generator's part.
		err := c.retry(stop, "wait for a step", func() error {
			for {
				status, err := c.get(stop, fmt.Sprintf("%s?after=%d", StepPath, last), &step)
				if err != nil || status == http.StatusOK {
					return err
				}
			}
		})
		if err != nil {
			if stop.Err() != nil {
				out.Partial = true
				return out, nil
			}
			return out, err
		}
		last = step.Seq
		if step.Done {
			out.Verdict = step.Verdict
			c.logf("the manager is done: %s", step.Verdict)
			return out, nil
		}
		run, err := c.carryOut(stop, kill, step)
		if err != nil {
			c.failStep(kill, step.Seq, err.Error())
			return out, fmt.Errorf("step %d: %w", step.Seq, err)
		}
		if err := c.retry(kill, "send the report", func() error {
			return c.do(kill, http.MethodPost, fmt.Sprintf("%s?step=%d", ResultPath, step.Seq), run, nil)
		}); err != nil {
			// The manager is gone: the shard's report is kept, not lost,
			// for `mailbench report` to merge by hand.
			if path, serr := c.keepReport(run, step.Seq); serr == nil {
				return out, fmt.Errorf("step %d: sending the report: %w; the shard's report is kept in %s", step.Seq, err, path)
			} else {
				return out, fmt.Errorf("step %d: sending the report: %w; keeping it failed too: %v", step.Seq, err, serr)
			}
		}
		out.Steps++
		if run.Partial && stop.Err() != nil {
			out.Partial = true
			return out, nil
		}
		step = Step{}
	}
}

// carryOut runs one step with heartbeats, which also carry the manager's
// request to stop.
func (c *client) carryOut(stop, kill context.Context, step Step) (*report.Run, error) {
	cfg, err := DecodeConfig(step, c.o.Base)
	if err != nil {
		return nil, err
	}
	if late := time.Since(step.StartAt); late > time.Second {
		return nil, fmt.Errorf("received the step %v after its start instant: the manager's start delay is too short for this generator, or the clocks disagree", late.Round(time.Millisecond))
	}
	stepStop, cancel := context.WithCancel(stop)
	defer cancel()
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		t := time.NewTicker(c.o.BeatEvery)
		defer t.Stop()
		for {
			select {
			case <-stepStop.Done():
				return
			case <-t.C:
			}
			var b Beat
			if err := c.do(kill, http.MethodPost, BeatPath, struct{}{}, &b); err != nil {
				c.logf("heartbeat: %v", err)
				continue
			}
			if b.Stop {
				c.logf("the manager asks to stop: ending the arrivals")
				cancel()
				return
			}
		}
	}()
	c.logf("step %d: shard %d/%d of %q starts at %s", step.Seq, step.Index, step.Count, cfg.Name, step.StartAt.UTC().Format(time.RFC3339Nano))
	run, err := c.o.RunShard(stepStop, kill, cfg, schedule.Shard{Index: step.Index, Count: step.Count}, step.StartAt)
	cancel()
	<-beatDone
	return run, err
}

// DecodeConfig is the config a step carries, checked against its digest,
// with the manager's file name (relative paths resolve against it) and
// base's password (nil base: none; the password then comes from
// users.password_env), validated.
func DecodeConfig(step Step, base *workload.Config) (*workload.Config, error) {
	if got := configDigest(step.Config); got != step.ConfigHash {
		return nil, fmt.Errorf("the step's config does not match its digest (%.12s, want %.12s)", got, step.ConfigHash)
	}
	dec := json.NewDecoder(bytes.NewReader(step.Config))
	dec.DisallowUnknownFields()
	cfg := &workload.Config{}
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("the step's config: %w (is the generator's mailbench the manager's?)", err)
	}
	if _, h, err := EncodeConfig(cfg); err != nil || h != step.ConfigHash {
		return nil, errors.New("the step's config does not read back as it was sent: the generator's mailbench is not the manager's")
	}
	cfg.File = step.File
	if base != nil {
		cfg.Users.Password = base.Users.Password
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("the step's config: %w", err)
	}
	if _, err := cfg.Password(); err != nil {
		return nil, fmt.Errorf("the step's config: %w (the manager never sends users.password: give the generator the config file, or set users.password_env)", err)
	}
	return cfg, nil
}

// ManagerURL turns host:port or an http(s) URL into the API's base URL.
func ManagerURL(addr string) (string, error) {
	if addr == "" {
		return "", errors.New("no manager address")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("manager %q: want HOST:PORT or http://HOST:PORT", addr)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func (c *client) logf(format string, a ...any) {
	if c.o.Log != nil {
		fmt.Fprintf(c.o.Log, "generator: "+format+"\n", a...)
	}
}

// retry calls f until it succeeds, the manager refuses, ctx ends, or the
// manager has been unreachable for ManagerLost.
func (c *client) retry(ctx context.Context, what string, f func() error) error {
	var firstFail time.Time
	for {
		err := f()
		var refused *Refused
		if err == nil || errors.As(err, &refused) || ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return err
		}
		if firstFail.IsZero() {
			firstFail = time.Now()
			c.logf("%s: %v (retrying for up to %v)", what, err, c.o.ManagerLost)
		}
		if time.Since(firstFail) > c.o.ManagerLost {
			return fmt.Errorf("%s: the manager at %s has been unreachable for %v: %w", what, c.base, c.o.ManagerLost, err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *client) failStep(ctx context.Context, seq int, why string) {
	if err := c.do(ctx, http.MethodPost, fmt.Sprintf("%s?step=%d", FailPath, seq), Failure{Error: why}, nil); err != nil {
		c.logf("telling the manager of the failure: %v", err)
	}
}

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		var buf bytes.Buffer
		if run, ok := body.(*report.Run); ok {
			if err := report.WriteJSON(&buf, run); err != nil {
				return nil, err
			}
		} else if err := json.NewEncoder(&buf).Encode(body); err != nil {
			return nil, err
		}
		rd = &buf
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.o.Token)
	req.Header.Set("Content-Type", "application/json")
	if c.id != "" {
		req.Header.Set(GeneratorHeader, c.id)
	}
	return c.o.HTTP.Do(req)
}

// keepReport writes run as JSON to KeepDir, named after the generator's
// shard and the step, and returns the path.
func (c *client) keepReport(run *report.Run, seq int) (string, error) {
	dir := c.o.KeepDir
	if dir == "" {
		dir = "."
	}
	shard := "whole"
	if sh := run.Shard; sh != nil {
		shard = fmt.Sprintf("%d-of-%d", sh.Index, sh.Count)
	}
	name := fmt.Sprintf("mailbench-shard-%s-step-%d-%s.json", shard, seq, time.Now().UTC().Format("20060102T150405Z"))
	path := filepath.Join(dir, name)
	f, err := atomicfile.Create(path)
	if err != nil {
		return "", err
	}
	if err := report.WriteJSON(f, run); err != nil {
		f.Abort()
		return "", err
	}
	return path, f.Commit()
}

// do sends body and decodes a 200's JSON into out (nil: discarded).
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.exchange(ctx, method, path, body, out)
	return err
}

// get is a GET whose 204 is not an error.
func (c *client) get(ctx context.Context, path string, out any) (int, error) {
	return c.exchange(ctx, http.MethodGet, path, nil, out)
}

func (c *client) exchange(ctx context.Context, method, path string, body, out any) (int, error) {
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBytes*16))
	if err != nil {
		return resp.StatusCode, err
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return resp.StatusCode, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		var e errorBody
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return resp.StatusCode, &Refused{Status: resp.StatusCode, Why: e.Error}
	case resp.StatusCode != http.StatusOK:
		return resp.StatusCode, fmt.Errorf("the manager answered HTTP %d", resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("the manager's answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
