package imapclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	imap "github.com/mailbench/mailbench/internal/goimap"

	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/lib/msgsum"
	"github.com/mailbench/mailbench/measure"
)

// target is a server the functional table runs against.
type target struct {
	name           string
	cfg            Config
	user, password string
}

// session is the state the functional steps share.
type session struct {
	c      *Client
	rec    *recorder
	folder string
	msgs   [][]byte // appended, in order
	ids    []string
	sent   []time.Time
	uids   []uint32
}

type step struct {
	name string
	fn   measure.Function // the expected observation; "" for untimed helpers
	run  func(t *testing.T, s *session) error
}

// functionalSteps exercise every function on a folder of their own, so they
// can run against any server (in-process or a real Dovecot).
func functionalSteps() []step {
	return []step{
		{"create", "", func(t *testing.T, s *session) error {
			return s.c.Create(context.Background(), s.folder)
		}},
		{"create again is ok", "", func(t *testing.T, s *session) error {
			return s.c.Create(context.Background(), s.folder)
		}},
		{"subscribe", "", func(t *testing.T, s *session) error {
			return s.c.Subscribe(context.Background(), s.folder)
		}},
		{"append 1", measure.IMAPAppend, appendStep(0)},
		{"append 2", measure.IMAPAppend, appendStep(1)},
		{"append 3", measure.IMAPAppend, appendStep(2)},
		{"status", "", func(t *testing.T, s *session) error {
			n, err := s.c.Status(context.Background(), s.folder)
			if err == nil && n != 3 {
				t.Errorf("STATUS MESSAGES = %d, want 3", n)
			}
			return err
		}},
		{"list", measure.IMAPList, func(t *testing.T, s *session) error {
			names, err := s.c.List(context.Background())
			if err == nil && (!slices.Contains(names, s.folder) || !slices.Contains(names, "INBOX")) {
				t.Errorf("LIST = %q, want INBOX and %q", names, s.folder)
			}
			return err
		}},
		{"lsub", measure.IMAPLsub, func(t *testing.T, s *session) error {
			names, err := s.c.Lsub(context.Background())
			if err == nil && !slices.Contains(names, s.folder) {
				t.Errorf("LSUB = %q, want %q among them", names, s.folder)
			}
			return err
		}},
		{"select folder", measure.IMAPSelectFolder, func(t *testing.T, s *session) error {
			mb, err := s.c.SelectFolder(context.Background(), s.folder)
			if err == nil && (mb.Name != s.folder || mb.Messages != 3 || mb.UIDValidity == 0 || mb.UIDNext == 0) {
				t.Errorf("SELECT = %+v, want %q with 3 messages and UIDs", mb, s.folder)
			}
			if err == nil && s.uids[0] != 0 && mb.UIDNext <= s.uids[2] {
				t.Errorf("UIDNEXT %d not above the last APPENDUID %d", mb.UIDNext, s.uids[2])
			}
			return err
		}},
		{"fetch range envelope", measure.IMAPFetchRange, func(t *testing.T, s *session) error {
			infos, err := s.c.FetchRangeEnvelope(context.Background(), 1, 0)
			if err != nil {
				return err
			}
			checkInfos(t, s, infos, true)
			return nil
		}},
		{"uid fetch range", measure.IMAPUIDFetch, func(t *testing.T, s *session) error {
			infos, err := s.c.UIDFetchRange(context.Background(), s.uids[0], s.uids[2])
			if err != nil {
				return err
			}
			checkInfos(t, s, infos, false)
			return nil
		}},
		{"fetch body", measure.IMAPFetchBody, func(t *testing.T, s *session) error {
			bi, err := s.c.FetchBody(context.Background(), 2)
			if err != nil {
				return err
			}
			msg := s.msgs[1]
			_, body, _ := strings.Cut(string(msg), "\r\n\r\n")
			want := delivery.BodyInfo{Size: int64(len(msg)), ID: s.ids[1], Sum: msgsum.BodySum([]byte(body)), BodySum: msgsum.BodySum([]byte(body))}
			if bi != want {
				t.Errorf("FetchBody = %+v, want %+v", bi, want)
			}
			return nil
		}},
		{"store", measure.IMAPStore, func(t *testing.T, s *session) error {
			if err := s.c.Store(context.Background(), 1); err != nil {
				return err
			}
			checkDeleted(t, s, s.uids[0])
			return nil
		}},
		{"store range", measure.IMAPStore, func(t *testing.T, s *session) error {
			if err := s.c.StoreRange(context.Background(), 1, 2); err != nil {
				return err
			}
			checkDeleted(t, s, s.uids[0])
			checkDeleted(t, s, s.uids[1])
			return nil
		}},
		{"uid store", measure.IMAPUIDStore, func(t *testing.T, s *session) error {
			if err := s.c.UIDStore(context.Background(), s.uids[2]); err != nil {
				return err
			}
			checkDeleted(t, s, s.uids[2])
			return nil
		}},
		{"expunge", measure.IMAPExpunge, func(t *testing.T, s *session) error {
			if err := s.c.Expunge(context.Background()); err != nil {
				return err
			}
			if mb := s.c.lib.Mailbox(); mb == nil || mb.NumMessages != 0 {
				t.Errorf("after EXPUNGE the mailbox is %+v, want it empty", mb)
			}
			return nil
		}},
		{"select inbox", measure.IMAPSelectInbox, func(t *testing.T, s *session) error {
			mb, err := s.c.SelectInbox(context.Background())
			if err == nil && (mb.Name != "INBOX" || mb.UIDValidity == 0) {
				t.Errorf("SELECT INBOX = %+v", mb)
			}
			return err
		}},
	}
}

func appendStep(i int) func(t *testing.T, s *session) error {
	return func(t *testing.T, s *session) error {
		id := fmt.Sprintf("%s-%d", s.folder, i+1)
		sent := time.Date(2026, 3, 4, 5, 6, 7, 123456789+i, time.UTC)
		msg := testMessage(id, sent, strings.Repeat(fmt.Sprintf("body line %d\r\n", i), 10*(i+1)))
		uid, err := s.c.Append(context.Background(), s.folder, msg, []string{`\Seen`}, sent)
		if err != nil {
			return err
		}
		if s.c.Has("UIDPLUS") && uid == 0 {
			t.Errorf("APPEND returned no UID although the server has UIDPLUS")
		}
		s.msgs = append(s.msgs, msg)
		s.ids = append(s.ids, id)
		s.sent = append(s.sent, sent)
		s.uids = append(s.uids, uid)
		return nil
	}
}

func checkInfos(t *testing.T, s *session, infos []delivery.MessageInfo, envelope bool) {
	t.Helper()
	if len(infos) != 3 {
		t.Fatalf("got %d messages, want 3: %+v", len(infos), infos)
	}
	for i, mi := range infos {
		if mi.Seq != uint32(i+1) || mi.ID != s.ids[i] || !mi.Sent.Equal(s.sent[i]) || mi.Size != int64(len(s.msgs[i])) {
			t.Errorf("message %d = %+v, want seq %d id %q sent %v size %d", i, mi, i+1, s.ids[i], s.sent[i], len(s.msgs[i]))
		}
		if mi.UID == 0 || (s.uids[i] != 0 && mi.UID != s.uids[i]) {
			t.Errorf("message %d UID %d, want %d", i, mi.UID, s.uids[i])
		}
		if !slices.Contains(mi.Flags, `\Seen`) {
			t.Errorf("message %d flags %q lack \\Seen", i, mi.Flags)
		}
		if envelope && (mi.Subject != "test "+s.ids[i] || mi.InternalDate.IsZero()) {
			t.Errorf("message %d subject %q internal date %v", i, mi.Subject, mi.InternalDate)
		}
	}
}

// checkDeleted verifies (unobserved) that uid carries \Deleted.
func checkDeleted(t *testing.T, s *session, uid uint32) {
	t.Helper()
	msgs, err := s.c.lib.Fetch(imap.UIDSetNum(imap.UID(uid)), &imap.FetchOptions{Flags: true}).Collect()
	if err != nil || len(msgs) != 1 || !slices.Contains(msgs[0].Flags, imap.FlagDeleted) {
		t.Errorf("UID %d after STORE: %v %+v, want \\Deleted", uid, err, msgs)
	}
}

func runFunctional(t *testing.T, tg target) {
	rec := &recorder{}
	cfg := tg.cfg
	cfg.Observer = rec
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	c, err := Connect(context.Background(), cfg, tg.user, tg.password)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	o := rec.last(t)
	if o.Function != measure.IMAPConnect || o.Class != measure.OK || o.Duration <= 0 {
		t.Errorf("connect observation %+v", o)
	}
	bd := c.Breakdown()
	if bd.TCP <= 0 || bd.Greeting <= 0 || bd.Auth <= 0 || (bd.TLS > 0) != (cfg.TLS == TLSStartTLS || cfg.TLS == TLSImplicit) {
		t.Errorf("breakdown %+v for TLS %q", bd, cfg.TLS)
	}
	if o.Connect == nil || *o.Connect != bd || o.Connect.TLSUsed != (cfg.TLS == TLSStartTLS || cfg.TLS == TLSImplicit) {
		t.Errorf("observation phases %+v, breakdown %+v, TLS %q", o.Connect, bd, cfg.TLS)
	}
	if sum := bd.TCP + bd.TLS + bd.Greeting + bd.Auth; sum > o.Duration {
		t.Errorf("breakdown sum %v exceeds the observed %v", sum, o.Duration)
	}
	s := &session{c: c, rec: rec, folder: fmt.Sprintf("mbtest-%d", time.Now().UnixNano())}
	t.Cleanup(func() {
		if !c.closed.Load() {
			c.lib.Unselect().Wait()
			c.lib.Delete(s.folder).Wait()
			if err := c.Logout(context.Background()); err != nil {
				t.Errorf("Logout: %v", err)
			}
		}
	})
	for _, st := range functionalSteps() {
		before := len(rec.All())
		if err := st.run(t, s); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		obs := rec.All()[before:]
		if st.fn == "" {
			if len(obs) != 0 {
				t.Errorf("%s: untimed helper observed %+v", st.name, obs)
			}
			continue
		}
		if len(obs) != 1 || obs[0].Function != st.fn || obs[0].Class != measure.OK || obs[0].Err != nil || obs[0].Duration <= 0 {
			t.Errorf("%s: observations %+v, want one OK %q", st.name, obs, st.fn)
		}
	}
}

func TestFunctionalInProcess(t *testing.T) {
	mt := startMem(t, 5)
	for _, tg := range []target{
		{"plain+login", Config{Address: mt.addr, TLS: TLSNone, Auth: AuthLogin}, testUser, testPassword},
		{"starttls+plain", Config{Address: mt.addr, TLS: TLSStartTLS, TLSConfig: mt.client, Auth: AuthPlain}, testUser, testPassword},
		{"implicit+login", Config{Address: mt.tlsAddr, TLS: TLSImplicit, TLSConfig: mt.client}, testUser, testPassword},
	} {
		t.Run(tg.name, func(t *testing.T) { runFunctional(t, tg) })
	}
}

// TestFunctionalDovecot runs the same table against a real server when
// MAILBENCH_DOVECOT_ADDR, _USER and _PASSWORD are set (optionally _TLS =
// none|starttls|implicit and _INSECURE=1 to skip certificate checks).
func TestFunctionalDovecot(t *testing.T) {
	addr := os.Getenv("MAILBENCH_DOVECOT_ADDR")
	if addr == "" {
		t.Skip("MAILBENCH_DOVECOT_ADDR not set: skipping the functional table against a real Dovecot")
	}
	cfg := Config{Address: addr, TLS: TLSMode(os.Getenv("MAILBENCH_DOVECOT_TLS"))}
	if os.Getenv("MAILBENCH_DOVECOT_INSECURE") == "1" {
		cfg.TLSConfig = &tls.Config{InsecureSkipVerify: true}
	}
	for _, auth := range []string{AuthLogin, AuthPlain} {
		cfg.Auth = auth
		t.Run(auth, func(t *testing.T) {
			runFunctional(t, target{"dovecot", cfg, os.Getenv("MAILBENCH_DOVECOT_USER"), os.Getenv("MAILBENCH_DOVECOT_PASSWORD")})
		})
	}
}

func TestSeededInbox(t *testing.T) {
	mt := startMem(t, 5)
	c, err := Connect(context.Background(), Config{Address: mt.addr, Timeout: 5 * time.Second}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mb, err := c.SelectInbox(context.Background())
	if err != nil || mb.Messages != 5 {
		t.Fatalf("SELECT INBOX = %+v, %v; want 5 messages", mb, err)
	}
	infos, err := c.FetchRangeEnvelope(context.Background(), 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mi := range infos {
		ids = append(ids, mi.ID)
	}
	if want := []string{"seed-2", "seed-3", "seed-4"}; !slices.Equal(ids, want) {
		t.Errorf("ids %q, want %q", ids, want)
	}
	for i := uint32(1); i <= 5; i++ {
		bi, err := c.FetchBody(context.Background(), i)
		if err != nil || bi.Sum != bi.BodySum || bi.ID != fmt.Sprintf("seed-%d", i) {
			t.Errorf("FetchBody(%d) = %+v, %v", i, bi, err)
		}
	}
	names, err := c.Lsub(context.Background())
	if err != nil || !slices.Equal(names, []string{"Archive"}) {
		t.Errorf("LSUB = %q, %v; want [Archive]", names, err)
	}
}

func TestTLSResumption(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mode  TLSMode
		cache bool
		want  []bool // Resumed per connect
	}{
		{"implicit, shared cache", TLSImplicit, true, []bool{false, true}},
		{"starttls, shared cache", TLSStartTLS, true, []bool{false, true}},
		{"implicit, no cache", TLSImplicit, false, []bool{false, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mt := startMem(t, 0)
			addr := mt.addr
			if tt.mode == TLSImplicit {
				addr = mt.tlsAddr
			}
			tc := mt.client.Clone()
			if !tt.cache {
				tc.ClientSessionCache = nil
			}
			rec := &recorder{}
			cfg := Config{Address: addr, TLS: tt.mode, TLSConfig: tc, Timeout: 5 * time.Second, Observer: rec}
			var resumed, observed []bool
			for range 2 {
				c, err := Connect(context.Background(), cfg, testUser, testPassword)
				if err != nil {
					t.Fatal(err)
				}
				resumed = append(resumed, c.Breakdown().Resumed)
				if o := rec.last(t); o.Connect == nil || !o.Connect.TLSUsed {
					t.Fatalf("observation %+v lacks TLS phases", o)
				} else {
					observed = append(observed, o.Connect.Resumed)
				}
				if err := c.Logout(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(resumed, tt.want) || !slices.Equal(observed, tt.want) {
				t.Errorf("Resumed per connect: breakdown %v, observed %v; want %v", resumed, observed, tt.want)
			}
		})
	}
}

func TestProtocolErrors(t *testing.T) {
	mt := startMem(t, 1)
	rec := &recorder{}
	cfg := Config{Address: mt.addr, Timeout: 5 * time.Second, Observer: rec}

	for _, auth := range []string{AuthLogin, AuthPlain} {
		t.Run("wrong password "+auth, func(t *testing.T) {
			wrong := "Wrong-" + testPassword
			cfg := cfg
			cfg.Auth = auth
			_, err := Connect(context.Background(), cfg, testUser, wrong)
			checkClass(t, err, rec.last(t), measure.IMAPConnect, measure.Auth)
			if strings.Contains(err.Error(), wrong) || strings.Contains(fmt.Sprint(rec.last(t)), wrong) {
				t.Errorf("password leaked: %v", err)
			}
		})
	}

	c, err := Connect(context.Background(), cfg, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name string
		fn   measure.Function
		run  func() error
	}{
		{"select missing folder", measure.IMAPSelectFolder, func() error {
			_, err := c.SelectFolder(context.Background(), "No/Such/Folder")
			return err
		}},
		{"append to missing folder", measure.IMAPAppend, func() error {
			_, err := c.Append(context.Background(), "Nowhere", []byte("Subject: x\r\n\r\nx\r\n"), nil, time.Time{})
			return err
		}},
		{"store without selection", measure.IMAPStore, func() error {
			return c.Store(context.Background(), 1)
		}},
		{"expunge without selection", measure.IMAPExpunge, func() error {
			return c.Expunge(context.Background())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkClass(t, tt.run(), rec.last(t), tt.fn, measure.Protocol)
		})
	}
	// A NO leaves the connection usable.
	if _, err := c.SelectInbox(context.Background()); err != nil {
		t.Errorf("SELECT INBOX after NO replies: %v", err)
	}
}

func checkClass(t *testing.T, err error, o measure.Observation, fn measure.Function, class measure.ErrorClass) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want class %q", class)
	}
	if got := measure.Classify(err); got != class {
		t.Errorf("Classify(%v) = %q, want %q", err, got, class)
	}
	if class == measure.Protocol {
		var pe *measure.ProtocolError
		if !errors.As(err, &pe) || pe.Reply == "" {
			t.Errorf("errors.As(%v, *ProtocolError) failed", err)
		}
	}
	if class == measure.Auth {
		var ae *measure.AuthError
		if !errors.As(err, &ae) || ae.Reply == "" {
			t.Errorf("errors.As(%v, *AuthError) failed", err)
		}
	}
	if o.Function != fn || o.Class != class || o.Err == nil || o.Err.Error() != err.Error() {
		t.Errorf("observation %+v, want %q class %q with the returned error", o, fn, class)
	}
}

func TestPasswordEchoIsRedacted(t *testing.T) {
	fs := startFake(t, fakeGreeting, func(cmd string) (string, fakeAction) {
		if strings.HasPrefix(cmd, "LOGIN ") {
			return "%[1]s NO [AUTHENTICATIONFAILED] bad credentials " + cmd + "\r\n", reply
		}
		return "%[1]s BAD what\r\n", reply
	})
	rec := &recorder{}
	_, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 2 * time.Second, Observer: rec}, testUser, testPassword)
	o := rec.last(t)
	checkClass(t, err, o, measure.IMAPConnect, measure.Auth)
	var pe *measure.AuthError
	errors.As(err, &pe)
	for _, s := range []string{err.Error(), o.Err.Error(), pe.Reply, fmt.Sprintf("%+v", o)} {
		if strings.Contains(s, testPassword) {
			t.Errorf("password in %q", s)
		}
	}
	if !strings.Contains(pe.Reply, "AUTHENTICATIONFAILED") || !strings.Contains(pe.Reply, measure.RedactedMask) {
		t.Errorf("reply %q lost the server's words", pe.Reply)
	}
}

func TestHiddenCapabilityIsInsideConnect(t *testing.T) {
	fs := startFake(t, "* OK no caps here\r\n", func(cmd string) (string, fakeAction) {
		switch {
		case cmd == "CAPABILITY":
			return "* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n%[1]s OK done\r\n", reply
		case strings.HasPrefix(cmd, "LOGIN "):
			return "%[1]s OK logged in\r\n", reply
		}
		return "%[1]s BAD what\r\n", reply
	})
	c, err := Connect(context.Background(), Config{Address: fs.addr, Timeout: 2 * time.Second}, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var verbs []string
	for _, cmd := range fs.seen() {
		verb, _, _ := strings.Cut(cmd, " ")
		verbs = append(verbs, verb)
	}
	if want := []string{"CAPABILITY", "LOGIN", "CAPABILITY"}; !slices.Equal(verbs, want) {
		t.Errorf("commands during Connect %q, want %q", verbs, want)
	}
}

// AppendFrom sends a generated message's Source as the literal: the server
// stores exactly Source's bytes (its size, its id, its body's sum). A
// writer whose bytes do not match the size it declared fails the command
// instead of hanging the run.
func TestAppendFromSource(t *testing.T) {
	mt := startMem(t, 0)
	cfg := Config{Address: mt.addr, Timeout: time.Second}
	c, err := Connect(context.Background(), cfg, testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gen, err := message.NewGenerator(3, []int{4096})
	if err != nil {
		t.Fatal(err)
	}
	env := message.Envelope{ID: "append-from-1", From: "a@example.test", To: []string{"b@example.test"}, Subject: "s", Sent: time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)}
	src := gen.Source(env, 4096, 1)
	if _, err := c.AppendFrom(context.Background(), "Sent", src, src.Size(), []string{`\Seen`}, env.Sent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SelectFolder(context.Background(), "Sent"); err != nil {
		t.Fatal(err)
	}
	got, err := c.FetchBody(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := gen.Message(env, 4096, 1)
	if got.Size != int64(len(want)) || got.ID != env.ID || got.Sum == "" || got.Sum != got.BodySum {
		t.Errorf("stored message: %+v; want %d bytes, id %s, its stamped sum equal to its body's", got, len(want), env.ID)
	}

	short := bytes.NewReader([]byte("Subject: short\r\n\r\nx\r\n"))
	if _, err := c.AppendFrom(context.Background(), "Sent", short, 100, nil, time.Time{}); err == nil {
		t.Error("AppendFrom with a writer 79 bytes short of its size succeeded")
	}
}

// TestStoreRangeRejectsEmptyRanges: a range that names no message is
// refused before anything is sent.
func TestStoreRangeRejectsEmptyRanges(t *testing.T) {
	for _, r := range [][2]uint32{{0, 1}, {0, 0}, {3, 2}} {
		if err := (&Client{}).StoreRange(context.Background(), r[0], r[1]); err == nil {
			t.Errorf("StoreRange(%d, %d) = nil, want an error", r[0], r[1])
		}
	}
}
