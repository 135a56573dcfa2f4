package populate

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/endpoints"
	imap "github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"
	"github.com/mailbench/mailbench/internal/mailboxes"
	"github.com/mailbench/mailbench/workload"
)

var update = flag.Bool("update", false, "rewrite testdata/*.transcript from this run")

// A dialect is how a server family answers the commands init and clean
// send, where the standards leave it free: its NAMESPACE, and the text
// (and absence of RFC 5530 codes) of its refusals. The replies are those
// of the real servers: Cyrus 3.6's as scripts/sut2's Cyrus sent them,
// Courier-IMAP's from its imapd.c.
type dialect struct {
	name      string
	namespace imap.NamespaceData
	// outside is the refusal of a CREATE outside the personal namespace.
	outside string
	// exists, missing: the NO texts for a CREATE of a mailbox that exists
	// and for a DELETE, SELECT or STATUS of one that does not.
	exists, deleteMissing, selectMissing, statusMissing string
	// subscribeMissing is the SUBSCRIBE of a missing mailbox's NO ("" if
	// the server allows it); unsubscribeMissingOK says UNSUBSCRIBE of one
	// that is not subscribed succeeds.
	subscribeMissing     string
	unsubscribeMissingOK bool
	// hasChildren, when set, is the NO of a DELETE of a mailbox that has
	// children: the server refuses it, as Cyrus does.
	hasChildren string
	// refuseAppends, when set, holds how many APPENDs (of any session) are
	// still to be refused with appendRefusal, as Cyrus refused one with
	// "NO System I/O error" just after it started.
	refuseAppends *atomic.Int64
	appendRefusal error
	// dropAppends, when set, holds how many APPENDs are still to be
	// answered by closing the connection, as a server whose process died.
	dropAppends *atomic.Int64
	// refuseLogins, when set, holds how many LOGINs are still to be
	// refused with a bare "NO database is locked", as an all-in-one server
	// under contention refused them.
	refuseLogins *atomic.Int64
	// deleteMissingOK: a DELETE of a folder that does not exist is
	// answered OK, as some servers do.
	deleteMissingOK bool
}

var (
	cyrusLike = dialect{
		name: "cyrus-like",
		namespace: imap.NamespaceData{
			Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}},
			Other:    []imap.NamespaceDescriptor{{Prefix: "user.", Delim: '.'}},
			Shared:   []imap.NamespaceDescriptor{{Prefix: "", Delim: '.'}},
		},
		outside:              "Permission denied",
		exists:               "Mailbox already exists",
		deleteMissing:        "Mailbox does not exist",
		selectMissing:        "Mailbox does not exist",
		statusMissing:        "Mailbox does not exist",
		subscribeMissing:     "Subscribe: Mailbox does not exist",
		unsubscribeMissingOK: true,
		hasChildren:          "Mailbox has inferior hierarchical names",
	}
	courierLike = dialect{
		name: "courier-like",
		namespace: imap.NamespaceData{
			Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}},
			Shared:   []imap.NamespaceDescriptor{{Prefix: "#shared.", Delim: '.'}, {Prefix: "shared.", Delim: '.'}},
		},
		outside:       "Invalid mailbox name.",
		exists:        "Cannot create this folder.",
		deleteMissing: "Cannot delete this folder.",
		selectMissing: "Unable to open this mailbox.",
		statusMissing: "[ALERT] STATUS failed",
	}
)

// dialectSession answers as its dialect over an in-memory user. It keeps
// the names of the user's mailboxes (in the server's shared tree) to
// refuse what the real server refuses.
type dialectSession struct {
	imapserver.Session
	d    dialect
	tree *mailboxTree
	user string
	conn *imapserver.Conn
}

// mailboxTree is every user's mailboxes: name to subscribed. The
// in-memory server below it keeps the messages; the tree gives the
// dialect's hierarchy ("." where imapmemserver has "/").
type mailboxTree struct {
	mu    sync.Mutex
	names map[string]map[string]bool
}

func (t *mailboxTree) has(user, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.names[user][name]
	return ok
}

func (t *mailboxTree) hasChildren(user, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.childrenLocked(user, name)
}

func (t *mailboxTree) childrenLocked(user, name string) bool {
	for n := range t.names[user] {
		if strings.HasPrefix(n, name+".") {
			return true
		}
	}
	return false
}

func (t *mailboxTree) add(user, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names[user] == nil {
		t.names[user] = map[string]bool{}
	}
	t.names[user][name] = false
}

func (t *mailboxTree) remove(user, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.names[user], name)
}

// subscribe sets name's subscription and says whether name exists.
func (t *mailboxTree) subscribe(user, name string, on bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.names[user][name]; !ok {
		return false
	}
	t.names[user][name] = on
	return true
}

// list is LIST's answer, sorted: the mailboxes matching any pattern, with
// \HasChildren or \HasNoChildren, and \Subscribed when asked for.
func (t *mailboxTree) list(user, ref string, patterns []string, o *imap.ListOptions) []imap.ListData {
	t.mu.Lock()
	defer t.mu.Unlock()
	var l []imap.ListData
	for name, sub := range t.names[user] {
		if !slices.ContainsFunc(patterns, func(p string) bool { return imapserver.MatchList(name, '.', ref, p) }) {
			continue
		}
		if o != nil && o.SelectSubscribed && !sub {
			continue
		}
		d := imap.ListData{Mailbox: name, Delim: '.', Attrs: []imap.MailboxAttr{imap.MailboxAttrHasNoChildren}}
		if t.childrenLocked(user, name) {
			d.Attrs[0] = imap.MailboxAttrHasChildren
		}
		if sub && o != nil && (o.SelectSubscribed || o.ReturnSubscribed) {
			d.Attrs = append(d.Attrs, imap.MailboxAttrSubscribed)
		}
		l = append(l, d)
	}
	slices.SortFunc(l, func(a, b imap.ListData) int { return strings.Compare(a.Mailbox, b.Mailbox) })
	return l
}

func no(text string) error { return &imap.Error{Type: imap.StatusResponseTypeNo, Text: text} }

// noCode is a NO whose text begins with a code in brackets, as Courier's
// "[ALERT] STATUS failed" and Cyrus's "[HASCHILDREN] ..." do.
func noCode(code imap.ResponseCode, text string) error {
	return &imap.Error{Type: imap.StatusResponseTypeNo, Code: code, Text: text}
}

func (s *dialectSession) Append(mailbox string, r imap.LiteralReader, o *imap.AppendOptions) (*imap.AppendData, error) {
	if s.d.refuseAppends != nil && s.d.refuseAppends.Add(-1) >= 0 {
		_, _ = io.Copy(io.Discard, r)
		return nil, s.d.appendRefusal
	}
	if s.d.dropAppends != nil && s.d.dropAppends.Add(-1) >= 0 {
		_, _ = io.Copy(io.Discard, r)
		s.conn.NetConn().Close()
		return nil, no("gone")
	}
	return s.Session.Append(mailbox, r, o)
}

func (s *dialectSession) Login(user, password string) error {
	if s.d.refuseLogins != nil && s.d.refuseLogins.Add(-1) >= 0 {
		return no("database is locked")
	}
	if err := s.Session.Login(user, password); err != nil {
		return err
	}
	s.user = user
	return nil
}

func (s *dialectSession) Namespace() (*imap.NamespaceData, error) {
	ns := s.d.namespace
	return &ns, nil
}

func (s *dialectSession) inside(name string) bool {
	return strings.EqualFold(name, "INBOX") || strings.HasPrefix(name, s.d.namespace.Personal[0].Prefix)
}

func (s *dialectSession) Create(name string, o *imap.CreateOptions) error {
	switch {
	case !s.inside(name):
		return no(s.d.outside)
	case s.tree.has(s.user, name):
		return no(s.d.exists)
	}
	if err := s.Session.Create(name, o); err != nil {
		return no(s.d.exists)
	}
	s.tree.add(s.user, name)
	return nil
}

func (s *dialectSession) Delete(name string) error {
	switch {
	case !s.tree.has(s.user, name) && s.d.deleteMissingOK:
		return nil
	case !s.tree.has(s.user, name):
		return no(s.d.deleteMissing)
	case s.d.hasChildren != "" && s.tree.hasChildren(s.user, name):
		return noCode(imap.ResponseCodeHasChildren, s.d.hasChildren)
	}
	if err := s.Session.Delete(name); err != nil {
		return no(s.d.deleteMissing)
	}
	s.tree.remove(s.user, name)
	return nil
}

func (s *dialectSession) Select(name string, o *imap.SelectOptions) (*imap.SelectData, error) {
	d, err := s.Session.Select(name, o)
	if err != nil {
		return nil, no(s.d.selectMissing)
	}
	return d, nil
}

func (s *dialectSession) Status(name string, o *imap.StatusOptions) (*imap.StatusData, error) {
	d, err := s.Session.Status(name, o)
	if err == nil {
		return d, nil
	}
	if text, ok := strings.CutPrefix(s.d.statusMissing, "[ALERT] "); ok {
		return nil, noCode(imap.ResponseCodeAlert, text)
	}
	return nil, no(s.d.statusMissing)
}

func (s *dialectSession) List(w *imapserver.ListWriter, ref string, patterns []string, o *imap.ListOptions) error {
	if len(patterns) == 0 {
		return w.WriteList(&imap.ListData{Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect}, Delim: '.'})
	}
	for _, d := range s.tree.list(s.user, ref, patterns, o) {
		if err := w.WriteList(&d); err != nil {
			return err
		}
	}
	return nil
}

func (s *dialectSession) Subscribe(name string) error {
	if !s.tree.subscribe(s.user, name, true) && s.d.subscribeMissing != "" {
		return no(s.d.subscribeMissing)
	}
	return nil
}

func (s *dialectSession) Unsubscribe(name string) error {
	if !s.tree.subscribe(s.user, name, false) && !s.d.unsubscribeMissingOK {
		return no("Cannot unsubscribe this folder.")
	}
	return nil
}

// startDialect serves cfg's users, each with an empty INBOX, from a
// server that answers as d, on 127.0.0.1; it points cfg's IMAP endpoint
// at it and returns the log of what crossed the wire.
func startDialect(t *testing.T, cfg *workload.Config, d dialect) *wireLog {
	t.Helper()
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	mem := imapmemserver.New()
	tree := &mailboxTree{names: map[string]map[string]bool{}}
	log := &wireLog{secrets: []string{}}
	for _, u := range users {
		mu := imapmemserver.NewUser(u.Login, u.Password)
		if err := mu.Create("INBOX", nil); err != nil {
			t.Fatal(err)
		}
		mem.AddUser(mu)
		tree.add(u.Login, "INBOX")
		log.secrets = append(log.secrets, u.Password)
	}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(conn *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &dialectSession{Session: mem.NewSession(), d: d, tree: tree, conn: conn}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapNamespace: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(log.listen(ln))
	t.Cleanup(func() { srv.Close() })
	cfg.Target.IMAP.Address = ln.Addr().String()
	return log
}

// TestDialects: with mailboxes.delimiter = "auto", init and clean each
// run twice against a Cyrus-like and a Courier-like server: the folders
// are placed in the server's "INBOX." namespace, the second init appends
// nothing, the second clean finds nothing to do, although neither server
// sends RFC 5530 codes. Without "auto", the same folders are refused with
// the server's words. What crossed the wire is testdata/<dialect>.transcript
// (go test ./populate -run TestDialects -update rewrites it).
func TestDialects(t *testing.T) {
	t.Parallel()
	for _, d := range []dialect{cyrusLike, courierLike} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := testConfig(t, 2)
			cfg.Mailboxes.Delimiter = workload.AutoDelimiter
			log := startDialect(t, cfg, d)

			resolved, line, err := endpoints.ResolveNamespace(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := "INBOX.Sent INBOX.Drafts INBOX.Trash INBOX.Archive INBOX.Projects INBOX.Projects.Alpha"
			if got := strings.Join(append(resolved.Mailboxes.Standard(), resolved.Mailboxes.Folders...), " "); got != want || resolved.Mailboxes.Delimiter != "." {
				t.Fatalf("resolved to %q with %q, want %q with \".\"", got, resolved.Mailboxes.Delimiter, want)
			}
			if !strings.Contains(line, `personal namespace "INBOX.", delimiter "."`) || cfg.Mailboxes.Sent != "Sent" {
				t.Errorf("line %q; the config given must stay as it was (sent %q)", line, cfg.Mailboxes.Sent)
			}
			total := planned(t, resolved)
			// One worker: the connections, and so the transcript, come in
			// one order.
			for i := range 2 {
				s, err := Init(ctx, cfg, Options{Workers: 1})
				if err != nil {
					t.Fatalf("init %d: %v", i+1, err)
				}
				if wantAppended := map[int]int64{0: total, 1: 0}[i]; s.Appended != wantAppended {
					t.Errorf("init %d appended %d, want %d", i+1, s.Appended, wantAppended)
				}
			}
			wantPlan(t, resolved)
			for i := range 2 {
				s, err := Clean(ctx, cfg, Options{Workers: 1})
				if err != nil {
					t.Fatalf("clean %d: %v", i+1, err)
				}
				if wantExpunged := map[int]int64{0: total, 1: 0}[i]; s.Expunged != wantExpunged {
					t.Errorf("clean %d expunged %d, want %d", i+1, s.Expunged, wantExpunged)
				}
			}
			_, lists := counts(t, resolved)
			for login, l := range lists {
				if strings.Contains(strings.Join(l, " "), "INBOX.Projects") {
					t.Errorf("%s: clean left %v", login, l)
				}
			}
			log.check(t, filepath.Join("testdata", d.name+".transcript"))

			plainCfg := testConfig(t, 1)
			plainCfg.Target.IMAP.Address = cfg.Target.IMAP.Address
			if _, err := Init(ctx, plainCfg, Options{}); err == nil || !strings.Contains(err.Error(), d.outside) {
				t.Errorf("init outside the namespace: %v, want the server's refusal %q", err, d.outside)
			}
		})
	}
}

// wireLog records, per connection in the order they were accepted, the
// lines each side sent: client lines as "C: ", server lines as "S: ".
// Literals are shown as "<literal>", not their bytes; passwords become
// "<password>". Safe for concurrent use.
type wireLog struct {
	secrets []string
	mu      sync.Mutex
	conns   []*connLog
}

type connLog struct {
	mu      sync.Mutex
	lines   []string
	in, out lineSplitter
}

// lineSplitter cuts one direction of a connection into lines, skipping
// the bytes of a literal announced by a line that ends in {N} or {N+}.
type lineSplitter struct {
	prefix  string
	pending []byte
	literal int
}

// A literal's size and an APPEND's date-time follow the clock (message
// dates are relative to now), so the transcript shows neither.
var (
	literalAtEnd = regexp.MustCompile(`\{(\d+)\+?\}$`)
	dateTime     = regexp.MustCompile(`"[ \d]\d-[A-Z][a-z]{2}-\d{4} \d\d:\d\d:\d\d [+-]\d{4}"`)
)

func (s *lineSplitter) feed(p []byte, emit func(string)) {
	for len(p) > 0 {
		if s.literal > 0 {
			n := min(s.literal, len(p))
			s.literal -= n
			p = p[n:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.pending = append(s.pending, p...)
			return
		}
		line := strings.TrimSuffix(string(append(s.pending, p[:i]...)), "\r")
		s.pending, p = s.pending[:0], p[i+1:]
		m := literalAtEnd.FindStringSubmatch(line)
		if m != nil {
			s.literal, _ = strconv.Atoi(m[1])
			line = literalAtEnd.ReplaceAllString(line, "{<size>+}")
		}
		emit(s.prefix + dateTime.ReplaceAllString(line, `"<date-time>"`))
		if m != nil {
			emit(s.prefix + "<literal>")
		}
	}
}

func (l *wireLog) listen(ln net.Listener) net.Listener { return &loggedListener{ln, l} }

type loggedListener struct {
	net.Listener
	log *wireLog
}

func (ll *loggedListener) Accept() (net.Conn, error) {
	c, err := ll.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cl := &connLog{in: lineSplitter{prefix: "C: "}, out: lineSplitter{prefix: "S: "}}
	ll.log.mu.Lock()
	ll.log.conns = append(ll.log.conns, cl)
	ll.log.mu.Unlock()
	return &loggedConn{Conn: c, log: cl}, nil
}

type loggedConn struct {
	net.Conn
	log *connLog
}

func (c *loggedConn) emit(line string) { c.log.lines = append(c.log.lines, line) }

func (c *loggedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.log.mu.Lock()
	c.log.in.feed(p[:n], c.emit)
	c.log.mu.Unlock()
	return n, err
}

func (c *loggedConn) Write(p []byte) (int, error) {
	c.log.mu.Lock()
	c.log.out.feed(p, c.emit)
	c.log.mu.Unlock()
	return c.Conn.Write(p)
}

// text is the transcript so far.
func (l *wireLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for i, c := range l.conns {
		c.mu.Lock()
		fmt.Fprintf(&b, "# connection %d\n", i+1)
		for _, line := range c.lines {
			for _, s := range l.secrets {
				line = strings.ReplaceAll(line, s, "<password>")
			}
			b.WriteString(line + "\n")
		}
		c.mu.Unlock()
	}
	return b.String()
}

// check compares the transcript with the golden file, or rewrites it
// under -update.
func (l *wireLog) check(t *testing.T, golden string) {
	t.Helper()
	got := l.text()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./populate -run TestDialects -update writes it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("transcript differs from %s at line %d:\n got %q\nwant %q\n(go test ./populate -run TestDialects -update rewrites it)", golden, i+1, g, w)
			}
		}
	}
}

// TestCleanCountsWhatItRemoved: clean reports the folders that existed
// before it and not after, so a second clean reports none, also against a
// server that answers OK to a DELETE of a missing folder.
func TestCleanCountsWhatItRemoved(t *testing.T) {
	t.Parallel()
	for _, okMissing := range []bool{false, true} {
		cfg := testConfig(t, 2)
		d := cyrusLike
		d.deleteMissingOK = okMissing
		cfg.Mailboxes.Delimiter = workload.AutoDelimiter
		startDialect(t, cfg, d)
		if _, err := Init(context.Background(), cfg, Options{Workers: 1}); err != nil {
			t.Fatal(err)
		}
		first, err := Clean(context.Background(), cfg, Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if want := 2 * len(cfg.Mailboxes.Folders); first.FoldersDeleted != want {
			t.Errorf("DELETE of a missing folder OK %v: first clean removed %d folders, want %d", okMissing, first.FoldersDeleted, want)
		}
		second, err := Clean(context.Background(), cfg, Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if second.FoldersDeleted != 0 || second.Expunged != 0 {
			t.Errorf("DELETE of a missing folder OK %v: second clean removed %d folders, %d messages; want none", okMissing, second.FoldersDeleted, second.Expunged)
		}
	}
}

// TestInitRetriesContendedLogin: a LOGIN refused with a bare NO (a
// contended server's "database is locked") is retried as a new connection
// with backoff, at most twice, in init and in clean alike; when the
// refusals outlast the retries the error names the refusal and says the
// server is contended (init's users add: try fewer --workers).
func TestInitRetriesContendedLogin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		refusals int64
		wantErr  bool
	}{{"two refusals", 2, false}, {"three refusals", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, 1)
			d := cyrusLike
			d.refuseLogins = new(atomic.Int64)
			cfg.Mailboxes.Delimiter = workload.AutoDelimiter
			startDialect(t, cfg, d)
			d.refuseLogins.Store(tc.refusals)
			_, err := Init(context.Background(), cfg, Options{Workers: 1, RetryPause: time.Millisecond})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "database is locked") || !strings.Contains(err.Error(), "contended") {
					t.Fatalf("Init() = %v, want the refusal and that the server is contended", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Init() = %v", err)
			}
			d.refuseLogins.Store(tc.refusals)
			if _, err := Clean(context.Background(), cfg, Options{Workers: 1, RetryPause: time.Millisecond}); err != nil {
				t.Fatalf("Clean() = %v", err)
			}
		})
	}
}

// TestInitRetriesTemporaryRefusal: an APPEND the server refuses for a
// reason that may pass (a bare NO, as Cyrus's "System I/O error") is
// retried, at most twice on its connection; then the user starts again on
// a new connection, at most twice, as after a lost connection. Nothing is
// appended or counted twice. A refusal for a lasting reason (over quota)
// stops init at once.
func TestInitRetriesTemporaryRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		refusal                  error
		refusals, drops          int64
		wantRetried, wantResumed int64
		wantErr                  string
	}{
		{"two bare NOs", no("System I/O error"), 2, 0, 2, 0, ""},
		{"UNAVAILABLE", noCode("UNAVAILABLE", "try again"), 1, 0, 1, 0, ""},
		{"three bare NOs", no("System I/O error"), 3, 0, 2, 1, ""},
		{"nine bare NOs", no("System I/O error"), 9, 0, 6, 2, "System I/O error"},
		{"a lost connection", nil, 0, 1, 0, 1, ""},
		{"three lost connections", nil, 0, 3, 0, 2, "connection lost"},
		{"over quota", noCode("OVERQUOTA", "Over quota"), 1, 0, 0, 0, "Over quota"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, 1)
			d := cyrusLike
			d.refuseAppends, d.appendRefusal, d.dropAppends = new(atomic.Int64), tc.refusal, new(atomic.Int64)
			d.refuseAppends.Store(tc.refusals)
			d.dropAppends.Store(tc.drops)
			cfg.Mailboxes.Delimiter = workload.AutoDelimiter
			startDialect(t, cfg, d)
			s, err := Init(context.Background(), cfg, Options{Workers: 1, RetryPause: time.Millisecond})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Init() = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Init() = %v", err)
			}
			if s.Retried != tc.wantRetried || s.Resumed != tc.wantResumed {
				t.Errorf("%d APPENDs retried, %d users resumed; want %d, %d", s.Retried, s.Resumed, tc.wantRetried, tc.wantResumed)
			}
			if tc.wantErr != "" {
				return
			}
			resolved, _, err := endpoints.ResolveNamespace(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			total := planned(t, resolved)
			users, _ := resolved.LoadUsers()
			if n := len(mailboxes.For(resolved, users[0].Login)); s.Appended != total || s.Present != 0 || s.Mailboxes != n {
				t.Errorf("appended %d, present %d, %d mailboxes; want %d, 0, %d (each mailbox once)", s.Appended, s.Present, s.Mailboxes, total, n)
			}
			wantPlan(t, resolved)
			if !strings.Contains(s.String(), "retried") && !strings.Contains(s.String(), "resumed") {
				t.Errorf("summary %q does not say what was retried", s)
			}
		})
	}
}
