// Command imapcost measures the generator's CPU time per IMAP command, by
// command type, against a running IMAP server (Dovecot from scripts/sut/up,
// or bench/target), and compares it with imaptest's recorded 66 µs per
// command (docs/performance.md, "IMAP generator cost"). bench/imap-cost
// builds and runs it.
//
//	go run ./bench/imapcost -addr 127.0.0.1:1143 -clients 10 -ops 3000 -out bench/out/imap-cost
//
// For every command type, -clients sessions (users user1..userN, one each)
// run -ops commands in all, concurrently, with mailbench's imapclient (the
// code a run uses, observations to measure.Discard). The CPU time is this
// process's utime+stime (getrusage) over the phase, divided by the number
// of commands: the server's CPU is not in it. Rounds alternate the types
// (-rounds, medians printed). With -out, one more round runs under the CPU
// profiler and saves <type>.pprof per type (not counted in the figures).
//
// The types (one command each unless noted):
//
//	connect      TCP connect, greeting, LOGIN (+ CAPABILITY when the OK has none), close without LOGOUT
//	logout       LOGOUT; measured as connect+LOGOUT minus connect
//	select       SELECT INBOX
//	fetch_range  FETCH n-19:n (ENVELOPE BODY.PEEK[HEADER.FIELDS (…)] FLAGS INTERNALDATE RFC822.SIZE UID), 20 messages
//	uid_fetch    UID FETCH of the newest 20 UIDs (UID BODY.PEEK[HEADER.FIELDS (…)] FLAGS RFC822.SIZE)
//	fetch_body   FETCH seq BODY[] of one -size message, header parsed, body hashed
//	list         LIST "" "*"
//	lsub         LSUB "" "*"
//	append       APPEND INBOX of one generated -size message
//	store        STORE seq +FLAGS.SILENT (\Deleted) (on the messages append added)
//	expunge      EXPUNGE (the first one of the phase removes what store marked)
//	session      imaptest's default mix as one session of 9 commands: LOGIN, LIST,
//	             SELECT, FETCH (20 envelopes), FETCH BODY[], STORE, EXPUNGE, APPEND, LOGOUT
//	mix          the same commands with imaptest's user, FETCH, FETCH2, STORE and APPEND
//	             flags and date drawn as imaptest draws them (see mix; no STORE in about
//	             half the sessions): the session bench/imaptest-vs-mailbench compares,
//	             since it makes Dovecot send what imaptest's session makes it send, and
//	             store what it stores (mailbench's own session above fetches about twice
//	             the bytes)
//
// mix is not among the default -types: name it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/internal/lib/runtimetune"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/workload"
)

// imaptestMicros is imaptest's CPU per command, measured on this project's
// machine (10 clients, 30 s, 46,655 commands for 3.07 s of CPU): the
// reference of the generator-CPU target (bench/targets.txt).
// bench/imaptest-vs-mailbench reproduces it with
// imaptest's default mix and measures the comparable session side by side
// (docs/performance.md, "imaptest measured here").
const imaptestMicros = 66.0

// imaptestSessionMicros is imaptest's CPU per session of about 9 commands.
const imaptestSessionMicros = 590.0

// sessionCommands is the most commands of a session (the session type
// sends them all; mix may leave STORE out): the phase's -ops are divided
// by it into sessions. The commands actually sent are counted.
const sessionCommands = 9

var allTypes = []string{"connect", "logout", "select", "fetch_range", "uid_fetch", "fetch_body", "list", "lsub", "append", "store", "expunge", "session"}

// knownTypes are allTypes and those -types runs only when named.
var knownTypes = append(slices.Clone(allTypes), "mix")

// isSession reports whether typ is a whole session of sessionCommands
// commands (counted and reported per session) rather than one command.
func isSession(typ string) bool { return typ == "session" || typ == "mix" }

type bench struct {
	cfg       imapclient.Config
	user      string
	logins    []string // user formatted for 1..clients: a session's login is looked up, as mailbench's users are, not formatted
	password  string
	clients   int
	ops       int
	size      int
	inbox     int
	gen       *message.Generator
	seq       uint64
	runID     uint32 // per process: Message-Ids are unique across runs
	mu        sync.Mutex
	userCPU   map[string][]float64 // user time per unit of each type, per round
	wakes     map[string][]float64 // voluntary context switches per unit of each type, per round
	cmds      map[string][]float64 // commands per session of the session types, per round
	others    map[string][]float64 // the host's CPU less this process's, µs per unit of each type, per round
	server    map[string][]float64 // the server's CPU (serverPid and its children), µs per unit of each type, per round
	serverPid int                  // 0: the server's CPU is not measured
	sent      atomic.Int64         // commands the session types sent (nineCommands)
}

func main() {
	// As mailbench does: measure the runtime as it ships (internal/lib/runtimetune).
	runtimetune.Apply()
	runtimetune.AdaptCores()
	addr := flag.String("addr", "127.0.0.1:1143", "IMAP server `host:port`")
	user := flag.String("user", "user%d", "login pattern, %d is 1..clients")
	clients := flag.Int("clients", 10, "concurrent sessions (imaptest's figure used 10)")
	ops := flag.Int("ops", 3000, "commands per type and round (sessions for the session type: ops/9)")
	rounds := flag.Int("rounds", 3, "rounds over the types; medians are printed")
	size := flag.Int("size", 4096, "message size for APPEND and the top-up of INBOX")
	inbox := flag.Int("inbox", 50, "top INBOX up to at least this many messages before measuring; the mix deletes as imaptest does with msgs= this")
	types := flag.String("types", strings.Join(allTypes, ","), "comma-separated command types")
	out := flag.String("out", "", "directory for one CPU profile per type (an extra round, not counted)")
	reset := flag.Bool("reset", false, "empty every client's INBOX first (then it is filled with this build's messages)")
	refCmd := flag.Float64("imaptest-us", imaptestMicros, "imaptest's CPU `µs` per command that the ratios divide by (default: the recorded figure)")
	refSession := flag.Float64("imaptest-session-us", imaptestSessionMicros, "imaptest's CPU `µs` per session that the session ratio divides by (default: the recorded figure)")
	writeMbox := flag.String("write-mbox", "", "write -mbox-messages messages of -size bytes to this mbox `file` and exit")
	mboxMessages := flag.Int("mbox-messages", 1000, "messages -write-mbox writes")
	serverPidFile := flag.String("server-pid-file", "", "the server's pid `file` (Dovecot's master.pid): its CPU and its children's over each measured phase is printed per session")
	serverCPUOf := flag.String("server-cpu-of", "", "print the CPU µs the process of this pid `file` and its children have used so far, and exit (bench/imaptest-vs-mailbench measures imaptest's runs with it)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("imapcost: ")
	if *serverCPUOf != "" {
		pid, err := readPidFile(*serverCPUOf)
		if err != nil {
			log.Fatalf("-server-cpu-of: %v", err)
		}
		cpu, ok := readServerCPU(pid)
		if !ok {
			log.Fatalf("-server-cpu-of: process %d (%s) is not visible in /proc", pid, *serverCPUOf)
		}
		fmt.Println(cpu.Microseconds())
		return
	}
	password := os.Getenv("MAILBENCH_PASSWORD")
	if password == "" {
		password = "mailbench"
	}
	gen, err := message.NewGenerator(7, []int{*size})
	if err != nil {
		log.Fatal(err)
	}
	b := &bench{
		cfg:  imapclient.Config{Address: *addr, Timeout: 30 * time.Second, Observer: measure.Discard},
		user: *user, password: password, clients: *clients, ops: *ops, size: *size, inbox: *inbox, gen: gen,
		runID: rand.Uint32(), userCPU: map[string][]float64{}, wakes: map[string][]float64{}, cmds: map[string][]float64{},
		others: map[string][]float64{}, server: map[string][]float64{},
	}
	if *serverPidFile != "" {
		if b.serverPid, err = readPidFile(*serverPidFile); err != nil {
			log.Fatalf("-server-pid-file: %v", err)
		}
		if _, ok := readServerCPU(b.serverPid); !ok {
			log.Fatalf("-server-pid-file: process %d (%s) is not visible in /proc", b.serverPid, *serverPidFile)
		}
	}
	for i := range b.clients {
		b.logins = append(b.logins, fmt.Sprintf(b.user, i+1))
	}
	if *refCmd <= 0 || *refSession <= 0 {
		log.Fatal("-imaptest-us and -imaptest-session-us want positive figures")
	}
	if *writeMbox != "" {
		if err := b.writeMbox(*writeMbox, *mboxMessages); err != nil {
			log.Fatal(err)
		}
		return
	}
	want := strings.Split(*types, ",")
	for _, t := range want {
		if !slices.Contains(knownTypes, t) {
			log.Fatalf("-types: unknown type %q (known: %s)", t, strings.Join(knownTypes, ","))
		}
	}
	if slices.Contains(want, "logout") && !slices.Contains(want, "connect") {
		want = append([]string{"connect"}, want...)
	}
	if *reset {
		if err := b.reset(); err != nil {
			log.Fatal(err)
		}
	}
	if err := b.topUp(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("imapcost: %s, %d clients, %d commands per type and round, %d rounds, %d-byte messages, GOMAXPROCS adapting up to %d, %s\n",
		*addr, *clients, *ops, *rounds, *size, runtimetune.Ceiling(), runtime.Version())

	perOp := map[string][]float64{}
	// The session type's pace (sessions per second of the measured phase)
	// and the process's CPU per second of it, per round. Against a server
	// that saturates the host's cores, CPU per session follows the
	// server's pace (docs/performance.md, "Issue 37, twenty-third round").
	sessionPace, sessionCores := map[string][]float64{}, map[string][]float64{}
	for r := range *rounds {
		for _, t := range want {
			cpu, n, wall, err := b.phase(t, "")
			if err != nil {
				log.Fatalf("round %d, %s: %v", r+1, t, err)
			}
			perOp[t] = append(perOp[t], float64(cpu.Microseconds())/float64(n))
			if isSession(t) && wall > 0 {
				sessionPace[t] = append(sessionPace[t], float64(n)/wall.Seconds())
				sessionCores[t] = append(sessionCores[t], cpu.Seconds()/wall.Seconds())
			}
		}
		if err := b.topUp(); err != nil {
			log.Fatal(err)
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			log.Fatal(err)
		}
		for _, t := range want {
			if _, _, _, err := b.phase(t, filepath.Join(*out, t+".pprof")); err != nil {
				log.Fatalf("profile %s: %v", t, err)
			}
		}
	}

	fmt.Printf("\n%-12s %10s %10s %10s %12s\n", "type", "µs/cmd", "min", "max", "÷ imaptest")
	med := map[string]float64{}
	for _, t := range want {
		v := slices.Clone(perOp[t])
		if t == "logout" {
			for i := range v {
				v[i] -= perOp["connect"][i]
			}
		}
		slices.Sort(v)
		m := v[len(v)/2]
		med[t] = m
		if isSession(t) {
			continue
		}
		fmt.Printf("%-12s %10.1f %10.1f %10.1f %11.2f×\n", t, m, v[0], v[len(v)-1], m/(*refCmd))
	}
	for _, t := range want {
		if !isSession(t) {
			continue
		}
		s, v := med[t], slices.Sorted(slices.Values(perOp[t]))
		cmds := median(b.cmds[t])
		fmt.Printf("\n%s (%.2f commands): %.0f µs per session (min %.0f, max %.0f) = %.2f× imaptest's %.0f µs; %.1f µs per command = %.2f× imaptest's %.0f µs\n",
			t, cmds, s, v[0], v[len(v)-1], s/(*refSession), *refSession, s/cmds, s/cmds/(*refCmd), *refCmd)
		fmt.Printf("%s user time: %.0f µs per session (median; the rest is the kernel's)\n", t, median(b.userCPU[t]))
		fmt.Printf("%s wake-ups: %.1f voluntary context switches per session (median, every thread of the process)\n", t, median(b.wakes[t]))
		if p, c := median(sessionPace[t]), median(sessionCores[t]); p > 0 {
			fmt.Printf("%s pace: %.1f sessions/s over the measured phase; client CPU %.3f of a core (medians)\n", t, p, c)
		}
		if o := b.others[t]; len(o) > 0 {
			fmt.Printf("%s host: %.0f µs of the host's other CPU per session (median; /proc/stat's busy time less this process's: the server, the kernel, everything else)\n", t, median(o))
		}
		if o := b.server[t]; len(o) > 0 {
			fmt.Printf("%s server: %.0f µs of the server's CPU per session (median; the process of -server-pid-file and its children, reaped or live)\n", t, median(o))
		}
	}
	if *out != "" {
		fmt.Printf("profiles: %s/<type>.pprof (go tool pprof -top %s/session.pprof)\n", *out, *out)
	}
}

func (b *bench) login(i int) string {
	if i < len(b.logins) {
		return b.logins[i]
	}
	return fmt.Sprintf(b.user, i+1)
}

func (b *bench) connect(ctx context.Context, i int) (*imapclient.Client, error) {
	return imapclient.Connect(ctx, b.cfg, b.login(i), b.password)
}

func (b *bench) message(i int) []byte {
	b.mu.Lock()
	b.seq++
	seq := b.seq
	b.mu.Unlock()
	env := message.Envelope{
		ID: delivery.NewID(b.runID, seq), From: "imapcost@example.test", To: []string{b.login(i) + "@example.test"},
		Subject: fmt.Sprintf("imapcost %d", seq), Sent: time.Now(),
	}
	return b.gen.Message(env, b.size, seq)
}

// writeMbox writes n messages to path in mbox format, rendered as the
// APPEND messages are (same generator, seed and size; To: imaptest@), so
// that imaptest appends the same kind of message as imapcost. The file
// depends on -size and n only: imaptest appends its messages again and
// again, and its state tracking reports an error when two messages with
// one Message-Id differ (Message-Ids r<size in hex>-<k>, dates from a fixed
// origin; imapcost's own messages carry a random run ID). Lines end in
// LF (imaptest sends them as CRLF and counts them so), no blank line
// separates the messages (imaptest would append it), and body lines that
// start with "From " are quoted as ">From ".
func (b *bench) writeMbox(path string, n int) error {
	if n < 1 {
		return fmt.Errorf("-mbox-messages wants at least 1, got %d", n)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := range n {
		seq := uint64(k + 1)
		sent := t0.Add(time.Duration(k) * time.Second)
		env := message.Envelope{
			ID: delivery.NewID(uint32(b.size), seq), From: "imapcost@example.test", To: []string{"imaptest@example.test"},
			Subject: fmt.Sprintf("imapcost %d", seq), Sent: sent,
		}
		msg := b.gen.Message(env, b.size, seq)
		fmt.Fprintf(w, "From imapcost@example.test %s\n", sent.Format("Mon Jan _2 15:04:05 2006"))
		for len(msg) > 0 {
			line, rest, _ := bytes.Cut(msg, []byte("\n"))
			msg = rest
			line = bytes.TrimSuffix(line, []byte("\r"))
			if bytes.HasPrefix(line, []byte("From ")) {
				w.WriteByte('>')
			}
			w.Write(line)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// reset empties every client's INBOX.
func (b *bench) reset() error {
	ctx := context.Background()
	for i := range b.clients {
		c, err := b.connect(ctx, i)
		if err != nil {
			return err
		}
		if _, err := c.EmptyMailbox(ctx, "INBOX"); err != nil {
			return err
		}
		if err := c.Logout(ctx); err != nil {
			return err
		}
	}
	return nil
}

// topUp appends messages to every client's INBOX until it holds b.inbox.
func (b *bench) topUp() error {
	ctx := context.Background()
	for i := range b.clients {
		c, err := b.connect(ctx, i)
		if err != nil {
			return err
		}
		mb, err := c.SelectInbox(ctx)
		if err != nil {
			return err
		}
		for n := int(mb.Messages); n < b.inbox; n++ {
			if _, err := c.Append(ctx, "INBOX", b.message(i), nil, time.Time{}); err != nil {
				return err
			}
		}
		if err := c.Logout(ctx); err != nil {
			return err
		}
	}
	return nil
}

// phase runs one type: b.ops commands over b.clients sessions. It returns
// the CPU time of the process over the measured part, the number of units
// (commands, or sessions for "session") and the wall time.
func (b *bench) phase(typ, profile string) (time.Duration, int, time.Duration, error) {
	ctx := context.Background()
	units := b.ops
	if isSession(typ) {
		units = max(b.ops/sessionCommands, b.clients)
	}
	per := max(units/b.clients, 1)
	units = per * b.clients

	// Untimed set-up: one logged-in session per client with INBOX selected.
	conns := make([]*imapclient.Client, b.clients)
	mbs := make([]imapclient.Mailbox, b.clients)
	needConn := typ != "connect" && typ != "logout" && !isSession(typ)
	if needConn {
		for i := range conns {
			c, err := b.connect(ctx, i)
			if err != nil {
				return 0, 0, 0, err
			}
			if mbs[i], err = c.SelectInbox(ctx); err != nil {
				return 0, 0, 0, err
			}
			conns[i] = c
		}
	}
	msgs := make([][][]byte, b.clients) // pre-rendered: the generator's message cost is not IMAP's
	if typ == "append" || isSession(typ) {
		for i := range msgs {
			for range per {
				msgs[i] = append(msgs[i], b.message(i))
			}
		}
	}
	runtime.GC()

	var pf *os.File
	if profile != "" {
		var err error
		if pf, err = os.Create(profile); err != nil {
			return 0, 0, 0, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return 0, 0, 0, err
		}
	}
	server0, serverOK := b.readServer()
	use0 := usage()
	host0, hostOK := readHostBusy()
	b.sent.Store(0)
	cpu0, wall0 := metrics.ProcessCPU(), time.Now()
	errs := make([]error, b.clients)
	var wg sync.WaitGroup
	for i := range b.clients {
		wg.Go(func() { errs[i] = b.work(ctx, typ, i, per, conns[i], mbs[i], msgs[i]) })
	}
	wg.Wait()
	cpu, wall := metrics.ProcessCPU()-cpu0, time.Since(wall0)
	if profile == "" && b.userCPU != nil {
		use := usage()
		b.userCPU[typ] = append(b.userCPU[typ], float64((use.user-use0.user).Microseconds())/float64(units))
		b.wakes[typ] = append(b.wakes[typ], float64(use.wakes-use0.wakes)/float64(units))
		if host, ok := readHostBusy(); ok && hostOK {
			b.others[typ] = append(b.others[typ], float64((host-host0-cpu).Microseconds())/float64(units))
		}
		if isSession(typ) {
			b.cmds[typ] = append(b.cmds[typ], float64(b.sent.Load())/float64(units))
		}
		if server, ok := b.readServer(); ok && serverOK {
			b.server[typ] = append(b.server[typ], float64((server-server0).Microseconds())/float64(units))
		}
	}
	if pf != nil {
		pprof.StopCPUProfile()
		pf.Close()
	}
	for _, c := range conns {
		if c != nil {
			c.Logout(ctx)
		}
	}
	if err := errorsJoin(errs); err != nil {
		return 0, 0, 0, err
	}
	return cpu, units, wall, nil
}

func (b *bench) work(ctx context.Context, typ string, i, n int, c *imapclient.Client, mb imapclient.Mailbox, msgs [][]byte) error {
	rng := rand.New(rand.NewPCG(uint64(i), 11))
	top := mb.Messages
	for k := range n {
		var err error
		switch typ {
		case "connect":
			var c *imapclient.Client
			if c, err = b.connect(ctx, i); err == nil {
				c.Close()
			}
		case "logout":
			var c *imapclient.Client
			if c, err = b.connect(ctx, i); err == nil {
				err = c.Logout(ctx)
			}
		case "select":
			_, err = c.SelectInbox(ctx)
		case "fetch_range":
			var infos []delivery.MessageInfo
			if infos, err = c.FetchRangeEnvelope(ctx, mb.Messages-19, mb.Messages); err == nil && len(infos) != 20 {
				err = fmt.Errorf("FETCH returned %d messages, want 20", len(infos))
			}
		case "uid_fetch":
			var infos []delivery.MessageInfo
			if infos, err = c.UIDFetchRange(ctx, mb.UIDNext-20, 0); err == nil && len(infos) == 0 {
				err = fmt.Errorf("UID FETCH returned no message")
			}
		case "fetch_body":
			var bi delivery.BodyInfo
			if bi, err = c.FetchBody(ctx, 1+rng.Uint32N(mb.Messages)); err == nil && bi.Size == 0 {
				err = fmt.Errorf("empty BODY[]")
			}
		case "list":
			_, err = c.List(ctx)
		case "lsub":
			_, err = c.Lsub(ctx)
		case "append":
			_, err = c.Append(ctx, "INBOX", msgs[k], nil, time.Time{})
		case "store":
			// Marks the newest messages (those the append phase added)
			// from the top down; the expunge phase removes them.
			if top > uint32(b.inbox) {
				err = c.Store(ctx, top)
				top--
			} else {
				// Nothing added is left to mark: mark the newest message
				// again (the expunge phase removes it, topUp restores the count).
				err = c.Store(ctx, mb.Messages)
			}
		case "expunge":
			err = c.Expunge(ctx)
		case "session":
			err = b.session(ctx, i, msgs[k])
		case "mix":
			err = b.mix(ctx, rng, msgs[k])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// session is imaptest's default mix as one mailbench session: LOGIN, LIST,
// SELECT, FETCH (20 envelopes), FETCH BODY[], STORE \Deleted, EXPUNGE,
// APPEND, LOGOUT. It removes one message and appends one.
func (b *bench) session(ctx context.Context, i int, msg []byte) error {
	return b.nineCommands(ctx, i, msg, appendOptions{}, func(c *imapclient.Client, mb imapclient.Mailbox) (uint32, uint32, error) {
		if mb.Messages < 20 {
			return 0, 0, fmt.Errorf("INBOX has %d messages, want ≥ 20", mb.Messages)
		}
		if _, err := c.FetchRangeEnvelope(ctx, mb.Messages-19, mb.Messages); err != nil {
			return 0, 0, err
		}
		_, err := c.FetchBody(ctx, mb.Messages)
		return 1, 1, err
	})
}

// appendOptions are an APPEND's flags and date (none: the zero value).
type appendOptions struct {
	flags []string
	date  time.Time
}

// nineCommands is the frame both session types share: LOGIN, LIST,
// SELECT INBOX, then fetches' two FETCHes, then STORE \Deleted of the
// messages from:to fetches returns (none when from is 0: no STORE),
// EXPUNGE, APPEND of msg with opts and LOGOUT.
func (b *bench) nineCommands(ctx context.Context, i int, msg []byte, opts appendOptions, fetches func(*imapclient.Client, imapclient.Mailbox) (from, to uint32, err error)) error {
	c, err := b.connect(ctx, i)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.List(ctx); err != nil {
		return err
	}
	mb, err := c.SelectInbox(ctx)
	if err != nil {
		return err
	}
	from, to, err := fetches(c, mb)
	if err != nil {
		return err
	}
	cmds := int64(8) // LOGIN, LIST, SELECT, FETCH, FETCH, EXPUNGE, APPEND, LOGOUT
	if from != 0 {
		// One message's range is sent as "STORE n", as Store sends it.
		if err := c.StoreRange(ctx, from, to); err != nil {
			return err
		}
		cmds++
	}
	if err := c.Expunge(ctx); err != nil {
		return err
	}
	if _, err := c.Append(ctx, "INBOX", msg, opts.flags, opts.date); err != nil {
		return err
	}
	if err := c.Logout(ctx); err != nil {
		return err
	}
	b.sent.Add(cmds)
	return nil
}

// imaptest's comparable mix (bench/imaptest-vs-mailbench) draws its FETCH
// items as its STATE_FETCH does (src/client-state.c at the commit
// docs/performance.md names): 1 to 4 items, each one of mixFields three
// times in four, else BODY.PEEK[HEADER.FIELDS (…)] of 1 to 4 of
// mixHeaders. imaptest's BODY (the non-extensible BODYSTRUCTURE) is asked
// as BODYSTRUCTURE, the form mailbench's client lists use.
var (
	mixFields  = []string{"UID", "FLAGS", "ENVELOPE", "INTERNALDATE", "BODYSTRUCTURE", "BODYSTRUCTURE", "RFC822.SIZE"}
	mixHeaders = []string{"From", "To", "Cc", "Subject", "References", "In-Reply-To", "Message-ID"}
	// mixBodies are STATE_FETCH2's sections, one per FETCH2, with UID;
	// its RFC822.HEADER is asked as BODY.PEEK[HEADER], the same bytes.
	mixBodies = []workload.FetchItem{
		{Name: "BODY.PEEK", Section: "HEADER"}, {Name: "BODY.PEEK", Section: "HEADER"},
		{Name: "BODY.PEEK"}, {Name: "BODY.PEEK", Part: []int{1}}, {Name: "BODY.PEEK", Section: "TEXT"},
	}
)

// mixItems draws one FETCH item list of imaptest's STATE_FETCH.
func mixItems(rng *rand.Rand) workload.FetchItems {
	var items workload.FetchItems
	for range rng.IntN(4) + 1 {
		if rng.IntN(4) != 0 {
			items = append(items, workload.FetchItem{Name: mixFields[rng.IntN(len(mixFields))]})
			continue
		}
		fields := make([]string, rng.IntN(4)+1)
		for j := range fields {
			fields[j] = mixHeaders[rng.IntN(len(mixHeaders))]
		}
		items = append(items, workload.FetchItem{Name: "BODY.PEEK", Section: "HEADER.FIELDS", Fields: fields})
	}
	return items
}

// mixAppend draws the flags and date of imaptest's APPEND
// (imap_client_append_random, src/client-state.c; the flags of
// mailbox_view_get_random_flags, src/mailbox.c): in half the APPENDs a
// flag list, each of mixSystemFlags in it with probability 1/2 and each of
// mixKeywords with 1/4; in half a date (imaptest's is the mbox message's).
//
// Why it matters: Dovecot's maildir saves a message without flags into
// new/ and the next session's SELECT moves it into cur/ (a directory scan,
// a rename, the uidlist rewritten), and one with flags straight into cur/.
// APPENDs without flags cost Dovecot about 3% more per session
// (docs/performance.md, "Issue 37, twenty-ninth round"), which slowed its
// pace with mailbench and raised the client's CPU per session with it.
func mixAppend(rng *rand.Rand) appendOptions {
	var o appendOptions
	if rng.IntN(2) == 0 {
		o.flags = []string{}
		for _, f := range mixSystemFlags {
			if rng.IntN(2) == 0 {
				o.flags = append(o.flags, f)
			}
		}
		for _, k := range mixKeywords {
			if rng.IntN(4) == 0 {
				o.flags = append(o.flags, k)
			}
		}
	}
	if rng.IntN(2) == 0 {
		o.date = mixAppendDate
	}
	return o
}

var (
	mixSystemFlags = []string{`\Answered`, `\Flagged`, `\Seen`, `\Draft`} // imaptest never appends \Deleted
	mixKeywords    = []string{"$Label1", "$Label2", "$Label3", "$Label4", "$Label5"}
	// mixAppendDate stands for the mbox message's date imaptest sends:
	// what Dovecot does with it (the file's mtime) does not depend on it.
	mixAppendDate = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
)

// mixRange draws the messages of imaptest's STATE_FETCH: min(n, 100)
// random picks of 1..n, which name about 63% of a mailbox of up to 100.
func mixRange(rng *rand.Rand, n uint32) (from, to uint32) {
	return pickedRun(rng, n, min(n, 100))
}

// pickedRun makes picks random picks of 1..n (n > 0) and returns a run of
// as many messages as they named, at a random start: the same messages'
// worth of a command, in a shorter one.
func pickedRun(rng *rand.Rand, n, picks uint32) (from, to uint32) {
	// On the stack for the mailboxes measured (about 50 messages): the
	// draw is inside the measured phase, and its cost is imapcost's, not
	// the IMAP client's.
	var small [256]bool
	seen := small[:]
	if n > uint32(len(small)) {
		seen = make([]bool, n)
	}
	var distinct uint32
	for range picks {
		if k := rng.Uint32N(n); !seen[k] {
			seen[k] = true
			distinct++
		}
	}
	from = 1 + rng.Uint32N(n-distinct+1)
	return from, from + distinct - 1
}

// mixDelete draws imaptest's STATE_STORE_DEL (DELETE in its mix) for a
// mailbox of n messages, threshold being its msgs=: count random picks,
// count drawn below 2 (1 + (APPEND's probability + DELETE's / 2) /
// DELETE's, both 100), raised by the messages over threshold once the
// mailbox has more than threshold + 5, so that deletions keep up with
// APPEND. It returns a run of as many messages as the picks named, at a
// random start; 0, 0 when count is 0: imaptest then sends no STORE
// (about half its sessions).
func mixDelete(rng *rand.Rand, n, threshold uint32) (from, to uint32) {
	bound := uint32(2)
	if n > threshold+5 {
		bound += n - threshold
	}
	count := min(rng.Uint32N(bound), 1000) // imaptest's 1,000: a command line's length
	if count == 0 {
		return 0, 0
	}
	return pickedRun(rng, n, count)
}

// mix is the session of imaptest's comparable mix with imaptest's draws:
// LOGIN, LIST, SELECT, FETCH (mixRange, mixItems), FETCH2 (one random
// message, UID and one of mixBodies), STORE \Deleted as mixDelete draws
// it (none in about half the sessions, as imaptest), EXPUNGE, APPEND
// (mixAppend's flags and date), LOGOUT. Dovecot sends a session of it about the bytes it sends an
// imaptest session (its "Logged out ... out=" figures), where the session
// type makes it send about twice as many.
func (b *bench) mix(ctx context.Context, rng *rand.Rand, msg []byte) error {
	// The user, too, is drawn for each session as imaptest draws it from its
	// userfile (user_get_random_from_conf: a line at random per new
	// client): a client does not keep to one mailbox. Kept to one, each
	// client's sessions ran back to back on the same mailbox, and Dovecot
	// spent 6-12% more of the host's CPU per session, which slowed its pace
	// and raised the client's CPU per session with it (docs/performance.md,
	// "Issue 37, twenty-seventh round").
	u := rng.IntN(b.clients)
	return b.nineCommands(ctx, u, msg, mixAppend(rng), func(c *imapclient.Client, mb imapclient.Mailbox) (uint32, uint32, error) {
		n := mb.Messages
		if n == 0 {
			return 0, 0, fmt.Errorf("INBOX is empty")
		}
		from, to := mixRange(rng, n)
		// keep 0: the messages are decoded and nothing is kept, as
		// mailbench's connected clients fetch a list and open a message
		// (internal/run/connected/profile.go); -1 built every message's
		// MessageInfo into a slice of up to 100 that nobody read.
		if _, err := c.FetchItems(ctx, measure.ClientList, from, to, mixItems(rng), 0); err != nil {
			return 0, 0, err
		}
		seq := 1 + rng.Uint32N(n)
		body := workload.FetchItems{{Name: "UID"}, mixBodies[rng.IntN(len(mixBodies))]}
		if _, err := c.FetchItems(ctx, measure.ClientOpen, seq, seq, body, 0); err != nil {
			return 0, 0, err
		}
		from, to = mixDelete(rng, n, uint32(b.inbox))
		return from, to, nil
	})
}

// median returns the median of v (the upper one of an even count), or 0
// when v is empty. It sorts a copy.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func errorsJoin(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// processUsage is what getrusage counts for the whole process so far.
type processUsage struct {
	// user is the user CPU time: the part of the CPU that the program's
	// own code and Go's runtime spend, which the kernel's share of a
	// session does not blur.
	user time.Duration
	// wakes counts voluntary context switches: each is a wait that ends
	// in a wake-up, and on a host where a wake-up is dear (docs/
	// performance.md, "Issue 37, twenty-fourth round") their count sets
	// the client's CPU more than its code does.
	wakes int64
}

// readHostBusy returns the CPU time every CPU of the host has been busy
// since boot (/proc/stat), and false where that is unknown.
//
// Why: on a host whose speed drifts (a shared guest: ±15% between runs a
// minute apart here), a session's client CPU moves with the server's CPU
// per session in the same window (docs/performance.md, "Issue 37,
// twenty-seventh round"). The host's other CPU per session is that speed,
// measured, beside the client's.
func readHostBusy() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	return parseHostBusy(data)
}

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture Go builds for but alpha.
const userHZ = 100

// parseHostBusy returns the busy time of /proc/stat's first line ("cpu",
// the sum over the CPUs): user, nice, system, irq and softirq. Idle,
// iowait and steal (time the hypervisor ran someone else) are not busy;
// guest time is already in user. It doesn't perform I/O.
func parseHostBusy(data []byte) (time.Duration, bool) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var ticks uint64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system (idle iowait) irq softirq
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

func usage() processUsage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return processUsage{}
	}
	return processUsage{user: time.Duration(ru.Utime.Nano()), wakes: ru.Nvcsw}
}
