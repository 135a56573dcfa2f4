package populate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/endpoints"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/workload"
)

const testPassword = "Pw-populate-9d1e"

// testConfig is a small profile: 3 users, INBOX 6 messages, folders 2-5,
// small messages.
func testConfig(t *testing.T, users int) *workload.Config {
	t.Helper()
	cfg, err := workload.ParseConfig("populate_test.toml", fmt.Appendf(nil, `
name = "populate-test"
seed = 7
[target.imap]
address = "127.0.0.1:1"
[target.smtp]
address = "127.0.0.1:1"
[users]
count = %d
password = %q
[load]
op_timeout = "5s"
[messages]
sizes = [ { size = "1KiB", share = 50 }, { size = "4KiB", share = 50 } ]
[mailboxes]
inbox_messages = 6
folders = ["Archive", "Projects", "Projects/Alpha"]
folder_messages_min = 2
folder_messages_max = 5
`, users, testPassword))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startTarget starts the embedded target with cfg's users and only the
// standard mailboxes (INBOX, Sent, Drafts, Trash) and no messages, and
// points cfg's IMAP endpoint at it.
func startTarget(t *testing.T, cfg *workload.Config) *demo.Target {
	t.Helper()
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	var tu []workload.User
	for _, u := range users {
		tu = append(tu, workload.User{Login: u.Login, Password: u.Password, Address: u.Address})
	}
	tg, err := demo.Start(context.Background(), demo.Options{Users: tu, LocalDomain: cfg.Users.LocalDomain})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	cfg.Target.IMAP.Address = tg.IMAPAddr()
	return tg
}

// planned is the number of messages the plan gives all of cfg's users.
func planned(t *testing.T, cfg *workload.Config) int64 {
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, u := range users {
		for _, p := range mailboxes.For(cfg, u.Login) {
			n += int64(p.Messages)
		}
	}
	return n
}

// counts returns STATUS MESSAGES of every planned mailbox of every user
// (-1 for a mailbox that does not exist) and the mailboxes LIST shows.
func counts(t *testing.T, cfg *workload.Config) (map[string]int, map[string][]string) {
	t.Helper()
	ctx := context.Background()
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	got, lists := map[string]int{}, map[string][]string{}
	for _, u := range users {
		c := connect(t, cfg, u)
		for _, p := range mailboxes.For(cfg, u.Login) {
			n, err := c.Status(ctx, p.Mailbox)
			if err != nil {
				got[u.Login+"/"+p.Mailbox] = -1
				continue
			}
			got[u.Login+"/"+p.Mailbox] = int(n)
		}
		if lists[u.Login], err = c.ListMailboxes(ctx); err != nil {
			t.Fatal(err)
		}
		c.Logout(ctx)
	}
	return got, lists
}

func connect(t *testing.T, cfg *workload.Config, u workload.User) *imapclient.Client {
	t.Helper()
	eps, err := endpoints.For(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := imapclient.Connect(context.Background(), eps.IMAP, u.Login, u.Password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantPlan checks that every user's mailboxes hold exactly the plan.
func wantPlan(t *testing.T, cfg *workload.Config) {
	t.Helper()
	got, _ := counts(t, cfg)
	users, _ := cfg.LoadUsers()
	for _, u := range users {
		for _, p := range mailboxes.For(cfg, u.Login) {
			if k := u.Login + "/" + p.Mailbox; got[k] != p.Messages {
				t.Errorf("%s: %d messages, want %d", k, got[k], p.Messages)
			}
		}
	}
}

func TestInitTwiceIsInitOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, 3)
	startTarget(t, cfg)
	total := planned(t, cfg)
	ctx := context.Background()

	s1, err := Init(ctx, cfg, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Users != 3 || s1.Appended != total || s1.Present != 0 || s1.Mailboxes != 3*7 || s1.Bytes < total*1024 {
		t.Errorf("first init: %+v; want 3 users, 21 mailboxes, %d appended, ≥ %d bytes", s1, total, total*1024)
	}
	wantPlan(t, cfg)

	s2, err := Init(ctx, cfg, Options{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Appended != 0 || s2.Bytes != 0 || s2.Present != total || s2.Users != 3 {
		t.Errorf("second init: %+v; want 0 appended, %d present", s2, total)
	}
	wantPlan(t, cfg)
}

// TestInitTopsUp removes the newest messages of one mailbox; init appends
// exactly the missing tail of the reproducible sequence.
func TestInitTopsUp(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, 1)
	startTarget(t, cfg)
	ctx := context.Background()
	if _, err := Init(ctx, cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	users, _ := cfg.LoadUsers()
	u := users[0]
	c := connect(t, cfg, u)
	if _, err := c.SelectInbox(ctx); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint32{6, 5} {
		if err := c.Store(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Expunge(ctx); err != nil {
		t.Fatal(err)
	}
	c.Logout(ctx)

	s, err := Init(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Appended != 2 || s.Present != planned(t, cfg)-2 {
		t.Errorf("top-up init: %+v; want 2 appended", s)
	}
	c = connect(t, cfg, u)
	if _, err := c.SelectInbox(ctx); err != nil {
		t.Fatal(err)
	}
	infos, err := c.FetchRangeEnvelope(ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mi := range infos {
		ids = append(ids, mi.ID)
	}
	var want []string
	for i := 1; i <= 6; i++ {
		want = append(want, fmt.Sprintf("init-%s-INBOX-%d", u.Login, i))
	}
	if !slices.Equal(ids, want) {
		t.Errorf("INBOX ids after top-up = %v, want %v", ids, want)
	}
}

func TestCleanEmptiesAndInitRestores(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, 2)
	startTarget(t, cfg)
	ctx := context.Background()
	if _, err := Init(ctx, cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	cs, err := Clean(ctx, cfg, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Users != 2 || cs.Expunged != planned(t, cfg) || cs.FoldersDeleted != 2*3 {
		t.Errorf("clean: %+v; want 2 users, %d messages, 6 folders", cs, planned(t, cfg))
	}
	got, lists := counts(t, cfg)
	for k, n := range got {
		mb := k[strings.Index(k, "/")+1:]
		standard := slices.Contains([]string{"INBOX", "Sent", "Drafts", "Trash"}, mb)
		switch {
		case standard && n != 0:
			t.Errorf("%s after clean: %d messages, want 0", k, n)
		case !standard && n != -1:
			t.Errorf("%s after clean: exists with %d messages, want deleted", k, n)
		}
	}
	for login, names := range lists {
		slices.Sort(names)
		if want := []string{"Drafts", "INBOX", "Sent", "Trash"}; !slices.Equal(names, want) {
			t.Errorf("%s: LIST after clean = %v, want %v", login, names, want)
		}
	}
	// Clean again: nothing left, no error.
	if cs, err := Clean(ctx, cfg, Options{}); err != nil || cs.Expunged != 0 {
		t.Errorf("second clean: %+v, %v; want 0 expunged", cs, err)
	}
	// Init after clean restores the full plan.
	if s, err := Init(ctx, cfg, Options{}); err != nil || s.Appended != planned(t, cfg) {
		t.Fatalf("init after clean: %+v, %v", s, err)
	}
	wantPlan(t, cfg)
}

func TestInitFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, cfg *workload.Config) (context.Context, Options)
		check func(t *testing.T, err error)
	}{
		{"embedded target refused", func(t *testing.T, cfg *workload.Config) (context.Context, Options) {
			cfg.Target.Embedded = true
			return context.Background(), Options{}
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "embedded") {
				t.Errorf("got %v, want an error about the embedded target", err)
			}
		}},
		{"wrong password", func(t *testing.T, cfg *workload.Config) (context.Context, Options) {
			startTarget(t, cfg)
			users, _ := cfg.LoadUsers()
			users[1].Password = "Wrong-" + testPassword
			return context.Background(), Options{Users: users}
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "user user2") {
				t.Errorf("got %v, want a login failure naming user2", err)
			}
			if err != nil && strings.Contains(err.Error(), testPassword) {
				t.Errorf("password in error %q", err)
			}
		}},
		{"cancelled", func(t *testing.T, cfg *workload.Config) (context.Context, Options) {
			startTarget(t, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, Options{}
		}, func(t *testing.T, err error) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
		}},
		{"server gone", func(t *testing.T, cfg *workload.Config) (context.Context, Options) {
			tg := startTarget(t, cfg)
			tg.Close()
			return context.Background(), Options{}
		}, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "connect") {
				t.Errorf("got %v, want a connect failure", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, 3)
			ctx, opts := tt.setup(t, cfg)
			start := time.Now()
			_, err := Init(ctx, cfg, opts)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			tt.check(t, err)
			_, cerr := Clean(ctx, cfg, opts)
			tt.check(t, cerr)
		})
	}
}

// TestProgressReports: the display is told of the job as it goes, and
// last of its end, with every message counted.
func TestProgressReports(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, 2)
	startTarget(t, cfg)
	var mu sync.Mutex
	var got []JobProgress
	show := func(p JobProgress) { mu.Lock(); got = append(got, p); mu.Unlock() }
	if _, err := Init(context.Background(), cfg, Options{Progress: show, ProgressEvery: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// How many ticks come before the end depends on how fast the target
	// is; TestProgressTicks pins the ticks down on a fake clock.
	if len(got) == 0 {
		t.Fatal("never told, want at least the end")
	}
	last := got[len(got)-1]
	if !last.Final || !last.OK || last.Job != "init" || last.Unit != "messages" || last.Done != last.Total || last.Total == 0 {
		t.Errorf("last report %+v: want the final one, every message done", last)
	}
	for _, p := range got[:len(got)-1] {
		if p.Final || p.Done > p.Total {
			t.Errorf("a tick %+v", p)
		}
	}
}

func TestOrders(t *testing.T) {
	var plan []mailboxes.Plan
	for _, mb := range []string{"INBOX", "A/B/C", "Sent", "A/B", "A", "X/Y"} {
		plan = append(plan, mailboxes.Plan{Mailbox: mb, Messages: 1})
	}
	var got []string
	for _, p := range creationOrder(plan, "/") {
		got = append(got, p.Mailbox)
	}
	if want := []string{"INBOX", "Sent", "A", "A/B", "X/Y", "A/B/C"}; !slices.Equal(got, want) {
		t.Errorf("creationOrder = %v, want %v", got, want)
	}
	if got, want := deletionOrder([]string{"A", "A/B", "X", "A/B/C", "X/Y"}, "/"), []string{"A/B/C", "A/B", "X/Y", "A", "X"}; !slices.Equal(got, want) {
		t.Errorf("deletionOrder = %v, want %v", got, want)
	}
	// A Courier-style server: "." separates levels, "/" is an ordinary character.
	if got, want := deletionOrder([]string{"INBOX.A", "INBOX.A.B", "X/Y"}, "."), []string{"INBOX.A.B", "INBOX.A", "X/Y"}; !slices.Equal(got, want) {
		t.Errorf("deletionOrder with \".\" = %v, want %v", got, want)
	}
}

func TestSummaryRate(t *testing.T) {
	tests := []struct {
		s    Summary
		want float64
	}{
		{Summary{Appended: 100, Duration: 4 * time.Second}, 25},
		{Summary{Appended: 100}, 0},
		{Summary{Appended: 0, Duration: time.Second}, 0},
	}
	for _, tt := range tests {
		if got := tt.s.MessagesPerSecond(); got != tt.want {
			t.Errorf("%+v: %v messages/s, want %v", tt.s, got, tt.want)
		}
	}
}
