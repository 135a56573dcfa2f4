package workload

import (
	"fmt"
	"math"
	"strings"
)

// The constants of the memory estimate: sizes of live data as bench/soak's
// TestMemoryConstants measures them, rounded up (the figures and how to
// measure them again: docs/performance.md, "The constants, measured").
const (
	memSessionClient    = 29 << 10 // one generator session's connection (plain; 16 KiB of it the read buffer)
	memSessionClientTLS = 35 << 10
	memSessionServer    = 16 << 10 // the embedded target's side of it
	memSessionServerTLS = 28 << 10
	// A connected client of [clients] waiting in IDLE (its goroutine,
	// timers and announcement channel besides the connection), and the
	// embedded target's side of it (bench/soak's BenchmarkConnectedClient).
	memClient          = 32 << 10
	memClientTLS       = 40 << 10
	memClientServer    = 20 << 10
	memClientServerTLS = 32 << 10
	memUser            = 256  // workload.User, the ledger's index, the user pool
	memUserEmbedded    = 1536 // an imapmemserver user with INBOX, Sent, Drafts, Trash
	memFolderEmbedded  = 256  // per further mailbox
	memMessageFactor   = 2    // the embedded target holds a message in at most twice its bytes (1.13-1.65× measured)
	memMessageOverhead = 1536 // ... plus its record and, once fetched, its envelope and header section (~1.4 KiB, go-imap fetch-cache.patch)
	memReceivedHeader  = 160  // the Received: line the embedded SMTP server prepends
	memLedgerMessage   = 16
	memLedgerRecipient = 16
	// memFixed is what a run holds whatever its size: the Go runtime, the
	// recorder and its timeline, the sink, the delivery checker. A round
	// figure above the soak run's (bench/soak), not a fit.
	memFixed = 64 << 20
	// memGCFactor: with GOGC=100 the heap grows to twice the live data
	// before the collector runs; resident memory follows the heap.
	memGCFactor = 2
)

// MemoryEstimate is what a run is expected to hold in memory at its peak,
// by part. It is an estimate from measured constants (workload/budget.go),
// not a measurement; its parts are live data, Total is what the process
// is expected to need: the parts × the garbage collector's headroom, plus
// the fixed cost.
type MemoryEstimate struct {
	// Sessions: the sessions open at once (Little's law × 2, at most the
	// generator's caps), each with its connection and a message in flight;
	// with the embedded target its side of the connections too.
	Sessions   int64
	Concurrent int // sessions assumed open at once
	// Clients: the connected clients of [clients], each with its
	// connection (and, with the embedded target, the server's side).
	Clients int64
	Users   int64
	// Population is what the embedded target's mailboxes hold before the
	// run; RunMail the mail it stores during the run (local deliveries and
	// the copies APPENDed to Sent; cleanup's expunges are not subtracted).
	// Both 0 for a real server.
	Population, RunMail int64
	Ledger              int64 // delivery accounting of the run's mail
	Generator           int64 // the message generator's body pool
	Fixed               int64
	Total               int64
	// UsersKnown is false when the users come from a file the plan did not
	// read: the per-user parts count no user.
	UsersKnown bool
}

// memoryInputs are what the estimate needs from the config besides the plan.
type memoryInputs struct {
	embedded, tls      bool
	meanSize, poolSize float64
	meanRcpts, local   float64 // recipients per message; the local share of them
	perUserMailboxes   float64 // mailboxes besides INBOX, Sent, Drafts, Trash
	perUserMessages    float64 // messages a user's mailboxes hold before the run
	runHours           float64 // warm-up + measurement + ramp-down
	maxConcurrent      int
	watchUsers         int // INBOXes watched (IDLE) for the whole run
	connected          int // clients.connected
	sourceAddrs        int // load.source_addresses (0: the system's one)
}

func newMemoryInputs(c *Config) memoryInputs {
	in := memoryInputs{
		embedded:      c.Target.Embedded,
		tls:           tlsOn(c.Target.IMAP.TLS) || tlsOn(c.Target.SMTP.TLS),
		local:         1 - c.Messages.RemoteShare,
		maxConcurrent: c.Load.MaxConcurrent,
		watchUsers:    c.Delivery.WatchUsers,
		connected:     c.Clients.Connected + c.PopulationConnections(),
		sourceAddrs:   len(c.Load.SourceAddresses),
		runHours:      (c.Phases.Warmup.Duration + c.Phases.Measurement.Duration + c.Phases.Rampdown.Duration).Hours(),
	}
	var total float64
	for _, s := range c.Messages.Sizes {
		total += s.Share
	}
	for _, size := range c.MessageSizes() {
		in.poolSize += float64(size) * 4 // message.VariantsPerSize bodies per bucket
	}
	for _, s := range c.Messages.Sizes {
		if total > 0 {
			in.meanSize += float64(s.Size) * s.Share / total
		}
	}
	total = 0
	for _, r := range c.Messages.Recipients {
		total += r.Share
	}
	for _, r := range c.Messages.Recipients {
		if total > 0 {
			in.meanRcpts += float64(r.Min+r.Max) / 2 * r.Share / total
		}
	}
	mb := c.Mailboxes
	in.perUserMailboxes = float64(len(mb.Folders))
	for _, name := range mb.Standard() {
		if name != "Sent" && name != "Drafts" && name != "Trash" {
			in.perUserMailboxes++
		}
	}
	in.perUserMessages = float64(mb.InboxMessages) +
		float64(len(mb.Standard())+len(mb.Folders))*float64(mb.FolderMessagesMin+mb.FolderMessagesMax)/2
	return in
}

// MemoryEstimate estimates the memory of the plan's run with the given
// number of users (the plan's own Memory is for Plan.Users, which is 0
// when the users come from a file). It doesn't perform I/O.
func (p *Plan) MemoryEstimate(users int) MemoryEstimate {
	in := p.mem
	e := MemoryEstimate{UsersKnown: users > 0 || p.UsersFile == ""}
	clamp := func(f float64) int64 { return int64(min(f, math.MaxInt64/16)) }

	// Sessions open at once: twice Little's law (operations slower than the
	// nominal 10 ms), at most the caps of the two schedulers.
	sess := min(float64(in.maxConcurrent), math.Ceil(2*p.Concurrency)+1) +
		min(float64(max(in.maxConcurrent/4, 1)), math.Ceil(2*p.InboundConcurrency)+1)
	e.Concurrent = int(sess)
	perSession := float64(memSessionClient)
	if in.tls {
		perSession = memSessionClientTLS
	}
	perSession += 2 * in.meanSize // the message being sent or read
	if in.embedded {
		perSession += memSessionServer + 2*in.meanSize
		if in.tls {
			perSession += memSessionServerTLS - memSessionServer
		}
	}
	e.Sessions = clamp(sess * perSession)
	perClient := float64(memClient)
	if in.tls {
		perClient = memClientTLS
	}
	if in.embedded {
		perClient += memClientServer
		if in.tls {
			perClient += memClientServerTLS - memClientServer
		}
	}
	e.Clients = clamp(float64(in.connected) * perClient)

	perUser := float64(memUser)
	if in.embedded {
		perUser += memUserEmbedded + memFolderEmbedded*in.perUserMailboxes
	}
	e.Users = clamp(float64(users) * perUser)

	// Mail the run submits: send sessions' messages and inbound mail.
	msgs := (p.SubmittedPerHour + p.InboundPerHour) * in.runHours
	e.Ledger = clamp(msgs * (memLedgerMessage + memLedgerRecipient*in.meanRcpts))
	if in.embedded {
		held := memMessageFactor*in.meanSize + memMessageOverhead
		e.Population = clamp(float64(users) * in.perUserMessages * held)
		stored := p.SubmittedPerHour*in.runHours*(in.meanRcpts*in.local+1) + // local copies + Sent
			p.InboundPerHour*in.runHours*in.meanRcpts
		e.RunMail = clamp(stored * (held + memMessageFactor*memReceivedHeader))
	}
	e.Generator = clamp(in.poolSize)
	e.Fixed = memFixed
	live := float64(e.Sessions) + float64(e.Clients) + float64(e.Users) + float64(e.Population) + float64(e.RunMail) + float64(e.Ledger) + float64(e.Generator)
	e.Total = clamp(memGCFactor*live + memFixed)
	return e
}

// Remedies says how to lower the estimate, biggest part first.
func (e MemoryEstimate) Remedies() string {
	type part struct {
		n   int64
		how string
	}
	parts := []part{
		{e.Population, "fewer users, fewer messages per mailbox (mailboxes.inbox_messages, folder_messages_*) or smaller messages (messages.sizes), or a real server instead of the embedded target (target.embedded = false)"},
		{e.RunMail, "a lower rate, a shorter run (phases) or smaller messages, or a real server instead of the embedded target"},
		{e.Sessions, "a lower rate or a lower load.max_concurrent_sessions"},
		{e.Clients, "fewer clients.connected"},
		{e.Users, "fewer users"},
		{e.Ledger, "a lower rate or a shorter run"},
	}
	best := parts[0]
	for _, p := range parts[1:] {
		if p.n > best.n {
			best = p
		}
	}
	return best.how
}

// String renders the estimate with its biggest parts, as `mailbench check`
// prints it.
func (e MemoryEstimate) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "~%s", FormatBytes(e.Total))
	var parts []string
	add := func(n int64, what string) {
		if n >= 1<<20 {
			parts = append(parts, FormatBytes(n)+" "+what)
		}
	}
	add(e.Population, "mailboxes before the run")
	add(e.RunMail, "mail delivered during the run")
	add(e.Sessions, fmt.Sprintf("%d sessions", e.Concurrent))
	add(e.Clients, "connected clients")
	add(e.Users, "users")
	add(e.Ledger, "delivery ledger")
	add(e.Generator, "message bodies")
	fmt.Fprintf(&b, " (live data ×%d for the garbage collector + %s fixed", memGCFactor, FormatBytes(e.Fixed))
	if len(parts) > 0 {
		b.WriteString("; live: " + strings.Join(parts, ", "))
	}
	b.WriteString(")")
	if !e.UsersKnown {
		b.WriteString("; users from a file not counted")
	}
	return b.String()
}

// FormatBytes renders n in binary units: "512 B", "1.5 MiB", "24 GiB".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmtNum(math.Round(f*10)/10) + " " + units[i]
}

// CheckMemory compares the estimate with the available memory: it returns
// an error naming both figures and how to lower the estimate when the run
// would not fit, and nil when it fits. available <= 0 means unknown: nil.
func (e MemoryEstimate) CheckMemory(available int64) error {
	if available <= 0 || e.Total <= available {
		return nil
	}
	return fmt.Errorf("the run needs an estimated %s of memory and the machine has %s available (MemAvailable): %s; to lower it: %s",
		FormatBytes(e.Total), FormatBytes(available), e, e.Remedies())
}
