package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailbench/mailbench/configs"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/internal/testing/testconfig"
	"github.com/mailbench/mailbench/workload"
)

const testToken = "a-token-of-at-least-16-bytes"

func newManager(t *testing.T, n int, mod func(*Options)) *Manager {
	t.Helper()
	o := Options{Generators: n, Token: testToken, Version: "v-test", ConfigHash: "cafe"}
	if mod != nil {
		mod(&o)
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// call serves one request through m's handler (no network: synctest
// bubbles and fast tests).
func call(h http.Handler, method, path, token, gen string, body string) (int, string) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if gen != "" {
		req.Header.Set(GeneratorHeader, gen)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	// A refusal's reason, unquoted.
	var e errorBody
	if rec.Code >= 400 && json.Unmarshal(rec.Body.Bytes(), &e) == nil {
		return rec.Code, e.Error
	}
	return rec.Code, rec.Body.String()
}

func register(t *testing.T, h http.Handler, index int) Welcome {
	t.Helper()
	b, _ := json.Marshal(Hello{Version: "v-test", ConfigHash: "cafe", Host: "gen", Index: index})
	code, body := call(h, "POST", RegisterPath, testToken, "", string(b))
	if code != http.StatusOK {
		t.Fatalf("register %d: HTTP %d %s", index, code, body)
	}
	var w Welcome
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Generators: 0, Token: testToken}, "generators 0: out of range: must be 1 to 4096"},
		{Options{Generators: 5000, Token: testToken}, "generators 5000: out of range: must be 1 to 4096"},
		{Options{Generators: 2, Token: "short"}, "the token is 5 bytes: at least 16 are needed"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestRegistration: what the register endpoint refuses, with which status
// and reason, and that a refusal changes nothing.
func TestRegistration(t *testing.T) {
	m := newManager(t, 2, nil)
	h := m.Handler()
	hello := func(mod func(*Hello)) string {
		hl := Hello{Version: "v-test", ConfigHash: "cafe", Host: "gen", Index: -1}
		if mod != nil {
			mod(&hl)
		}
		b, _ := json.Marshal(hl)
		return string(b)
	}
	for _, tc := range []struct {
		name, token, body string
		code              int
		want              string
	}{
		{"no token", "", hello(nil), 401, "no token, or not the manager's token"},
		{"wrong token", "not-the-token-at-all", hello(nil), 401, "not the manager's token"},
		{"not JSON", testToken, "{", 400, "registration: unexpected EOF"},
		{"unknown field", testToken, `{"version":"v-test","index":-1,"shard":3}`, 400, `json: unknown field "shard"`},
		{"two values", testToken, hello(nil) + "{}", 400, "data after the JSON value"},
		{"too large", testToken, `{"host":"` + strings.Repeat("x", 70<<10) + `"}`, 400, "larger than 65536 bytes"},
		{"other version", testToken, hello(func(h *Hello) { h.Version = "v-old" }), 409, `version "v-old": the manager runs "v-test"`},
		{"other config", testToken, hello(func(h *Hello) { h.ConfigHash = "beef" }), 409, "is not the manager's"},
		{"index out of range", testToken, hello(func(h *Hello) { h.Index = 2 }), 400, "shard index 2: out of range: the run has 2 generators (0 to 1)"},
		{"index below -1", testToken, hello(func(h *Hello) { h.Index = -2 }), 400, "shard index -2: out of range"},
	} {
		code, body := call(h, "POST", RegisterPath, tc.token, "", tc.body)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: HTTP %d %s, want %d %q", tc.name, code, strings.TrimSpace(body), tc.code, tc.want)
		}
	}
	// Nothing registered: both shards are free, the asked-for one first.
	if w := register(t, h, 1); w.Index != 1 || w.Count != 2 || w.MaxClockOffset != 500*time.Millisecond {
		t.Errorf("asked for 1: got %+v", w)
	}
	if code, body := call(h, "POST", RegisterPath, testToken, "", hello(func(h *Hello) { h.Index = 1 })); code != 409 || !strings.Contains(body, "shard 1 is taken by gen") {
		t.Errorf("index taken: HTTP %d %s", code, body)
	}
	if w := register(t, h, -1); w.Index != 0 {
		t.Errorf("any index: got %d, want the free 0", w.Index)
	}
	if code, body := call(h, "POST", RegisterPath, testToken, "", hello(nil)); code != 409 || !strings.Contains(body, "all 2 generators are registered") {
		t.Errorf("a third: HTTP %d %s", code, body)
	}
	// A generator's own config is optional: "" runs the manager's.
	m2 := newManager(t, 1, nil)
	if code, body := call(m2.Handler(), "POST", RegisterPath, testToken, "", hello(func(h *Hello) { h.ConfigHash = "" })); code != 200 {
		t.Errorf("no config of its own: HTTP %d %s", code, body)
	}
	// Every other endpoint needs a registered generator.
	for _, ep := range []struct{ method, path string }{{"GET", StepPath + "?after=0"}, {"POST", BeatPath}, {"POST", ResultPath + "?step=1"}, {"POST", FailPath + "?step=0"}} {
		if code, body := call(h, ep.method, ep.path, testToken, "no-such-id", "{}"); code != 403 || !strings.Contains(body, "unknown generator") {
			t.Errorf("%s %s unregistered: HTTP %d %s", ep.method, ep.path, code, body)
		}
		if code, _ := call(h, ep.method, ep.path, "", "no-such-id", "{}"); code != 401 {
			t.Errorf("%s %s without a token: HTTP %d", ep.method, ep.path, code)
		}
	}
}

// TestBarrierNamesTheMissing: the registration deadline fails the run
// naming the shards that never came, and a generator that registered and
// went silent, or failed, by its index and host.
func TestBarrierNamesTheMissing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, 3, func(o *Options) { o.RegisterTimeout = time.Minute; o.SilenceTimeout = 10 * time.Minute })
		register(t, m.Handler(), 0)
		start := time.Now()
		err := m.WaitRegistered(context.Background())
		var se *ShardsError
		if !errors.As(err, &se) {
			t.Fatalf("WaitRegistered = %v, want a ShardsError", err)
		}
		if got := time.Since(start); got < time.Minute || got > time.Minute+2*time.Second {
			t.Errorf("gave up after %v, want the 1m deadline", got)
		}
		want := "the generators: shard 1/3: never registered within 1m0s; shard 2/3: never registered within 1m0s"
		if err.Error() != want {
			t.Errorf("got  %q\nwant %q", err, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, 2, func(o *Options) { o.SilenceTimeout = 30 * time.Second })
		h := m.Handler()
		w0 := register(t, h, 0)
		call(h, "POST", FailPath+"?step=0", testToken, w0.ID, `{"error":"its clock is 3s from the manager's"}`)
		err := m.WaitRegistered(context.Background())
		if err == nil || err.Error() != "the generators: shard 0/2 (gen): its clock is 3s from the manager's" {
			t.Errorf("a failed generator: %v", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, 2, func(o *Options) { o.SilenceTimeout = 30 * time.Second; o.RegisterTimeout = time.Hour })
		register(t, m.Handler(), 1)
		err := m.WaitRegistered(context.Background())
		if err == nil || err.Error() != "the generators: shard 1/2 (gen): went silent for 30s after registering (it died or lost the network)" {
			t.Errorf("a silent generator: %v", err)
		}
	})
}

// stepConfig is a workload for the step tests: nothing runs it.
func stepConfig(t *testing.T) *workload.Config {
	cfg := testconfig.Quick(t, 2*time.Second)
	cfg.Target.Embedded = false
	cfg.Target.IMAP.Address, cfg.Target.SMTP.Address = "127.0.0.1:1", "127.0.0.1:2"
	return cfg
}

// TestStepFailures: a step fails, naming the shard, when a generator
// reports a failure, goes silent during the step, or sends no report by
// the step's deadline while still beating; the other shards are asked to
// stop; a report that is not the shard's is refused.
func TestStepFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act is what generator 1 does once the step is given out.
		act  func(h http.Handler, id string, step Step)
		want string
	}{
		{"fails", func(h http.Handler, id string, step Step) {
			call(h, "POST", FailPath+"?step=1", testToken, id, `{"error":"login refused"}`)
		}, "step 1: shard 1/2 (gen): login refused"},
		{"dies", func(h http.Handler, id string, step Step) {},
			"step 1: shard 1/2 (gen): went silent for 30s during the step (it died or lost the network)"},
		{"misses its deadline", func(h http.Handler, id string, step Step) {
			for {
				time.Sleep(5 * time.Second)
				if code, body := call(h, "POST", BeatPath, testToken, id, "{}"); code != 200 || strings.Contains(body, `"stop":true`) {
					return
				}
			}
		}, "shard 1/2 (gen): sent no report by its deadline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newManager(t, 2, func(o *Options) { o.SilenceTimeout = 30 * time.Second; o.StartDelay = time.Second })
				h := m.Handler()
				w0, w1 := register(t, h, 0), register(t, h, 1)
				cfg := stepConfig(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				// Generator 0 beats until told to stop.
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					for ctx.Err() == nil {
						time.Sleep(5 * time.Second)
						_, body := call(h, "POST", BeatPath, testToken, w0.ID, "{}")
						if strings.Contains(body, `"stop":true`) {
							return
						}
					}
				}()
				go func() {
					code, body := call(h, "GET", StepPath+"?after=0", testToken, w1.ID, "")
					var s Step
					if code != 200 || json.Unmarshal([]byte(body), &s) != nil {
						t.Errorf("step poll: HTTP %d %s", code, body)
						return
					}
					// A report that is not a shard's is refused.
					if code, body := call(h, "POST", ResultPath+"?step=1", testToken, w1.ID, `{"schema_version":1}`); code != 400 {
						t.Errorf("a report without shard: HTTP %d %s", code, body)
					}
					if code, body := call(h, "POST", ResultPath+"?step=1", testToken, w1.ID, "not json"); code != 400 || !strings.Contains(body, "not a JSON document") {
						t.Errorf("garbage as a report: HTTP %d %s", code, body)
					}
					tc.act(h, w1.ID, s)
				}()
				_, err := m.Run(ctx, ctx, cfg)
				var se *ShardsError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Run = %v, want %q", err, tc.want)
				}
				select {
				case <-stopped:
				case <-time.After(time.Minute):
					t.Error("the healthy shard was not asked to stop")
				}
				cancel()
				synctest.Wait()
			})
		})
	}
}

// TestLongPollGivesTheStep: a step poll is held until a step is given
// out, answers 204 after PollWait, and gives the end once finished.
func TestLongPollGivesTheStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, 1, func(o *Options) { o.PollWait = 15 * time.Second })
		h := m.Handler()
		w := register(t, h, -1)
		start := time.Now()
		if code, _ := call(h, "GET", StepPath+"?after=0", testToken, w.ID, ""); code != 204 || time.Since(start) != 15*time.Second {
			t.Errorf("no step: HTTP %d after %v, want 204 after 15s", code, time.Since(start))
		}
		if code, body := call(h, "GET", StepPath+"?after=x", testToken, w.ID, ""); code != 400 {
			t.Errorf("after=x: HTTP %d %s", code, body)
		}
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			time.Sleep(3 * time.Second)
			m.Finish("COMPLIANT", time.Minute)
		}()
		code, body := call(h, "GET", StepPath+"?after=0", testToken, w.ID, "")
		var s Step
		if code != 200 || json.Unmarshal([]byte(body), &s) != nil || !s.Done || s.Verdict != "COMPLIANT" {
			t.Errorf("after Finish: HTTP %d %s", code, body)
		}
		// Finish returns once the one generator has seen the end.
		<-finished
		if got := time.Since(start); got > 15*time.Second+4*time.Second {
			t.Errorf("Finish waited until %v: it should return when every generator saw the end", got)
		}
	})
}

// TestConfigRoundTrip: every shipped config reads back from a step
// exactly (the run's config hash is the one the manager computes), with
// the generator's password and file, and without its password on the
// wire.
func TestConfigRoundTrip(t *testing.T) {
	for _, name := range configs.Names() {
		data, _ := configs.Lookup(name)
		cfg, err := workload.ParseConfig(name+".toml", data)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Users.Password = "s3cret-pw"
		cfg.ScheduleSeed = 77
		body, hash, err := EncodeConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(body, []byte("s3cret-pw")) {
			t.Errorf("%s: the password is in the step", name)
		}
		got, err := DecodeConfig(Step{Config: body, ConfigHash: hash}, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a, b := orchestrator.ConfigHash(got), orchestrator.ConfigHash(cfg); a != b {
			t.Errorf("%s: decoded config hash %.12s, want %.12s", name, a, b)
		}
		// Another first digit (a hash that starts with "0" is changed to
		// "1"), so that the digest always differs.
		wrong := "0" + hash[1:]
		if hash[0] == '0' {
			wrong = "1" + hash[1:]
		}
		if _, err := DecodeConfig(Step{Config: body, ConfigHash: wrong}, cfg); err == nil {
			t.Errorf("%s: a digest mismatch was accepted", name)
		}
		if name == "quick" {
			// Without a config of its own, the generator needs the password
			// from the environment.
			if _, err := DecodeConfig(Step{Config: body, ConfigHash: hash}, nil); err == nil || !strings.Contains(err.Error(), "the manager never sends users.password") {
				t.Errorf("no base, no password_env: %v", err)
			}
		}
	}
}

func TestManagerURL(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:7070": "http://10.0.0.1:7070", "http://m:7070/": "http://m:7070", "https://m.example:443": "https://m.example:443",
	} {
		if got, err := ManagerURL(in); err != nil || got != want {
			t.Errorf("ManagerURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://m:21", "http://"} {
		if _, err := ManagerURL(bad); err == nil {
			t.Errorf("ManagerURL(%q) accepted", bad)
		}
	}
}

// TestAFailedShardFailsTheLaterSteps: once a shard has failed a step, the
// next step fails at once naming it, without waiting for it to go silent.
func TestAFailedShardFailsTheLaterSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, 1, func(o *Options) { o.SilenceTimeout = 30 * time.Second; o.StartDelay = time.Second })
		h := m.Handler()
		w := register(t, h, 0)
		go func() {
			call(h, "GET", StepPath+"?after=0", testToken, w.ID, "")
			call(h, "POST", FailPath+"?step=1", testToken, w.ID, `{"error":"login refused"}`)
		}()
		ctx := context.Background()
		if _, err := m.Run(ctx, ctx, stepConfig(t)); err == nil {
			t.Fatal("step 1 did not fail")
		}
		start := time.Now()
		_, err := m.Run(ctx, ctx, stepConfig(t))
		if err == nil || !strings.Contains(err.Error(), "shard 0/1 (gen): failed step 1: login refused") || time.Since(start) > time.Second {
			t.Errorf("step 2 after %v: %v", time.Since(start), err)
		}
	})
}
