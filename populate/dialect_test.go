package populate

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/imapserver"
	"github.com/mailbench/mailbench/internal/goimap/imapserver/imapmemserver"
	"github.com/mailbench/mailbench/workload"
)

// courierLike is an in-memory session that answers as Courier and Cyrus
// do: its personal namespace is "INBOX." with "." (NAMESPACE), a CREATE
// outside it is refused ("NO Permission denied"), and its NO replies carry
// no RFC 5530 codes ([ALREADYEXISTS], [NONEXISTENT]), only text.
type courierLike struct{ imapserver.Session }

func (s courierLike) Namespace() (*imap.NamespaceData, error) {
	return &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "INBOX.", Delim: '.'}}}, nil
}

// plain drops the response code of a NO, as Cyrus and Courier send it.
func plain(err error) error {
	var ie *imap.Error
	if errors.As(err, &ie) {
		return &imap.Error{Type: ie.Type, Text: ie.Text}
	}
	return err
}

func (s courierLike) Create(name string, o *imap.CreateOptions) error {
	if !strings.HasPrefix(name, "INBOX.") {
		return &imap.Error{Type: imap.StatusResponseTypeNo, Text: "Permission denied"}
	}
	return plain(s.Session.Create(name, o))
}
func (s courierLike) Delete(name string) error { return plain(s.Session.Delete(name)) }
func (s courierLike) Select(name string, o *imap.SelectOptions) (*imap.SelectData, error) {
	d, err := s.Session.Select(name, o)
	return d, plain(err)
}
func (s courierLike) Status(name string, o *imap.StatusOptions) (*imap.StatusData, error) {
	d, err := s.Session.Status(name, o)
	return d, plain(err)
}
func (s courierLike) Subscribe(name string) error   { return plain(s.Session.Subscribe(name)) }
func (s courierLike) Unsubscribe(name string) error { return plain(s.Session.Unsubscribe(name)) }

// startCourierLike serves cfg's users from a courierLike server on
// 127.0.0.1 and points cfg's IMAP endpoint at it.
func startCourierLike(t *testing.T, cfg *workload.Config) {
	t.Helper()
	users, err := cfg.LoadUsers()
	if err != nil {
		t.Fatal(err)
	}
	mem := imapmemserver.New()
	for _, u := range users {
		mu := imapmemserver.NewUser(u.Login, u.Password)
		if err := mu.Create("INBOX", nil); err != nil {
			t.Fatal(err)
		}
		mem.AddUser(mu)
	}
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return courierLike{mem.NewSession()}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapNamespace: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	cfg.Target.IMAP.Address = ln.Addr().String()
}

// TestCourierLikeNamespace: with mailboxes.delimiter = "auto" the folders
// are placed in the server's "INBOX." namespace, and init and clean each
// run twice on a server without RFC 5530 codes; without "auto", the same
// folders are refused, as Courier and Cyrus refuse them.
func TestCourierLikeNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testConfig(t, 2)
	cfg.Mailboxes.Delimiter = workload.AutoDelimiter
	startCourierLike(t, cfg)

	resolved, line, err := ResolveNamespace(ctx, cfg)
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
	for i := range 2 {
		s, err := Init(ctx, cfg, Options{Workers: 2})
		if err != nil {
			t.Fatalf("init %d: %v", i+1, err)
		}
		if wantAppended := map[int]int64{0: total, 1: 0}[i]; s.Appended != wantAppended {
			t.Errorf("init %d appended %d, want %d", i+1, s.Appended, wantAppended)
		}
		wantPlan(t, resolved)
	}
	for i := range 2 {
		if _, err := Clean(ctx, cfg, Options{Workers: 2}); err != nil {
			t.Fatalf("clean %d: %v", i+1, err)
		}
	}
	_, lists := counts(t, resolved)
	for login, l := range lists {
		if strings.Contains(strings.Join(l, " "), "INBOX.Projects") {
			t.Errorf("%s: clean left %v", login, l)
		}
	}

	plainCfg := testConfig(t, 1)
	plainCfg.Target.IMAP.Address = cfg.Target.IMAP.Address
	if _, err := Init(ctx, plainCfg, Options{}); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("init outside the namespace: %v, want the server's refusal", err)
	}
}
