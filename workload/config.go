// Package workload is the definition of a run: the config model (strict
// TOML, file:line errors, defaults decoded over), the users, the phases
// and the run's Window, and the plan (the session steps, the expected
// load and the compliance rows) that `mailbench check` prints. It doesn't
// perform network I/O.
package workload

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
	"github.com/mailbench/mailbench/measure"
)

// Config is a workload file: what to load, how hard, for how long, and what
// counts as compliant. Load it with Load or ParseConfig, which fills defaults, decodes
// the file over them strictly and validates the result.
type Config struct {
	Name string `toml:"name"`
	Seed int64  `toml:"seed"`

	Target     TargetConfig     `toml:"target"`
	Sink       SinkConfig       `toml:"sink"`
	Users      UsersConfig      `toml:"users"`
	Load       LoadConfig       `toml:"load"`
	Phases     PhasesConfig     `toml:"phases"`
	Sessions   SessionsConfig   `toml:"sessions"`
	Messages   MessagesConfig   `toml:"messages"`
	Mailboxes  MailboxesConfig  `toml:"mailboxes"`
	Compliance ComplianceConfig `toml:"compliance"`
	Delivery   DeliveryConfig   `toml:"delivery"`
	Clients    ClientsConfig    `toml:"clients"`
	Population PopulationConfig `toml:"population"`
	Profiles   ProfilesConfig   `toml:"profiles"`
	Server     ServerConfig     `toml:"server"`
	Disclosure DisclosureConfig `toml:"disclosure"`

	// ScheduleSeed, when not zero, replaces Seed for the arrival schedules
	// and the sessions' choices (not for the mailbox population or the
	// users): certify and size give every run its own derived seed while
	// the mailboxes stay the same. It is never read from a file.
	ScheduleSeed int64 `toml:"-"`

	// File is the path the config was read from ("" for built-in defaults).
	File string `toml:"-"`

	// lines locates the keys of the file the config was parsed from, for
	// the errors of CheckInputs; nil for a config built in code.
	lines tomlstrict.Lines
	// overridden names the keys Overrides set, and what set them
	// ("users.count": "--users"), for errors and Where.
	overridden map[string]string
	// usersRead keeps the users file as first read (LoadUsers), shared by
	// the config's copies; nil for a config built in code.
	usersRead *usersRead
}

// TargetConfig names the system under test.
type TargetConfig struct {
	// Embedded starts mailbench's in-process demo target (IMAP + SMTP) and
	// ignores IMAP and SMTP below.
	Embedded bool     `toml:"embedded"`
	IMAP     Endpoint `toml:"imap"`
	SMTP     Endpoint `toml:"smtp"` // where send sessions submit mail
	// Inbound is where the background stream of remote senders delivers
	// (an MX's port 25, say). Unset fields take SMTP's address and TLS
	// settings; its auth defaults to "none", as remote MTAs don't log in.
	Inbound Endpoint `toml:"inbound"`
}

// validate adds the problems of the target section to v.
func (t *TargetConfig) validate(v *validator) {
	for _, ep := range []struct {
		name  string
		e     *Endpoint
		auths []string
	}{{"imap", &t.IMAP, []string{"login", "plain"}}, {"smtp", &t.SMTP, []string{"none", "plain", "login"}}} {
		p := tomlstrict.PathOf("target", ep.name)
		if !t.Embedded {
			if ep.e.Address == "" {
				v.add(p.With("address"), "required unless target.embedded = true")
			} else {
				v.hostPort(p.With("address"), ep.e.Address, false)
			}
		}
		v.oneOf(p.With("tls"), string(ep.e.TLS), "none", "starttls", "implicit")
		v.oneOf(p.With("min_tls_version"), ep.e.MinTLSVersion, "", "1.2", "1.3")
		v.oneOf(p.With("auth"), ep.e.Auth, ep.auths...)
	}
	// target.inbound: every field optional (defaults from target.smtp).
	in := t.Inbound
	if in.Address != "" {
		v.hostPort(tomlstrict.PathOf("target", "inbound", "address"), in.Address, false)
	}
	v.oneOf(tomlstrict.PathOf("target", "inbound", "tls"), string(in.TLS), "", "none", "starttls", "implicit")
	v.oneOf(tomlstrict.PathOf("target", "inbound", "min_tls_version"), in.MinTLSVersion, "", "1.2", "1.3")
	v.oneOf(tomlstrict.PathOf("target", "inbound", "auth"), in.Auth, "", "none", "plain", "login")

}

// InboundEndpoint is Target.Inbound with its unset fields taken from
// Target.SMTP. It doesn't perform I/O.
func (t TargetConfig) InboundEndpoint() Endpoint {
	in := t.Inbound
	if in.Address == "" {
		in.Address = t.SMTP.Address
	}
	if in.TLS == "" {
		in.TLS = t.SMTP.TLS
		if in.CAFile == "" {
			in.CAFile = t.SMTP.CAFile
		}
		if in.ServerName == "" {
			in.ServerName = t.SMTP.ServerName
		}
		if !in.InsecureSkipVerify {
			in.InsecureSkipVerify = t.SMTP.InsecureSkipVerify
		}
		if in.MinTLSVersion == "" {
			in.MinTLSVersion = t.SMTP.MinTLSVersion
		}
		if !in.SessionResumption {
			in.SessionResumption = t.SMTP.SessionResumption
		}
	}
	if in.Auth == "" {
		in.Auth = "none"
	}
	return in
}

// Endpoint is one server address and how to reach it.
type Endpoint struct {
	Address string          `toml:"address"` // host:port
	TLS     measure.TLSMode `toml:"tls"`     // "none" | "starttls" | "implicit"
	// InsecureSkipVerify disables certificate verification; the report warns.
	InsecureSkipVerify bool   `toml:"insecure_skip_verify"`
	CAFile             string `toml:"ca_file"`
	ServerName         string `toml:"server_name"`
	SessionResumption  bool   `toml:"session_resumption"`
	MinTLSVersion      string `toml:"min_tls_version"` // "1.2" | "1.3"
	Auth               string `toml:"auth"`            // IMAP: "login" | "plain"; SMTP: "none" | "plain" | "login"
}

// SinkConfig is mailbench's SMTP sink, where the SUT relays remote mail.
type SinkConfig struct {
	Enabled         bool            `toml:"enabled"`
	Listen          string          `toml:"listen"` // host:port
	TLS             measure.TLSMode `toml:"tls"`    // "none" | "starttls" | "implicit"
	CertFile        string          `toml:"cert_file"`
	KeyFile         string          `toml:"key_file"`
	MaxMessageBytes int64           `toml:"max_message_bytes"`
	MaxRecipients   int             `toml:"max_recipients"`
	SaveDir         string          `toml:"save_dir"` // "" discards bodies
}

// validate adds the problems of the sink section to v.
func (s *SinkConfig) validate(v *validator) {
	if s.Enabled {
		v.hostPort(tomlstrict.PathOf("sink", "listen"), s.Listen, true)
	}
	v.oneOf(tomlstrict.PathOf("sink", "tls"), string(s.TLS), "none", "starttls", "implicit")
	// Without cert_file and key_file the sink generates a self-signed
	// certificate; one without the other is a mistake.
	if (s.CertFile == "") != (s.KeyFile == "") {
		if s.CertFile == "" {
			v.add(tomlstrict.PathOf("sink", "key_file"), "needs sink.cert_file too (or neither, for a generated self-signed certificate)")
		} else {
			v.add(tomlstrict.PathOf("sink", "cert_file"), "needs sink.key_file too (or neither, for a generated self-signed certificate)")
		}
	}
	if s.MaxMessageBytes < 0 {
		v.add(tomlstrict.PathOf("sink", "max_message_bytes"), "must be >= 0 (got %d)", s.MaxMessageBytes)
	}
	v.nonNegativeInt(tomlstrict.PathOf("sink", "max_recipients"), s.MaxRecipients)

}

// UsersConfig says who the simulated users are.
type UsersConfig struct {
	Count        int    `toml:"count"`
	Pattern      string `toml:"pattern"`       // fmt pattern with one %d, e.g. "user%d" (1-based)
	Password     string `toml:"password"`      // never printed
	PasswordEnv  string `toml:"password_env"`  // env var holding the password; wins over Password
	File         string `toml:"file"`          // CSV user,password; replaces Count/Pattern
	LocalDomain  string `toml:"local_domain"`  // default example.test
	RemoteDomain string `toml:"remote_domain"` // default remote.test
	// LoginWithDomain logs in as user@local_domain instead of the bare name.
	LoginWithDomain bool `toml:"login_with_domain"`
}

// validate adds the problems of the users section to v (what it needs of
// other sections, Config.validate checks).
func (u *UsersConfig) validate(v *validator) {
	if u.File != "" {
		if v.written(tomlstrict.PathOf("users", "count")) {
			v.add(tomlstrict.PathOf("users", "count"), "cannot be used with users.file (the file lists the users)")
		}
		if v.written(tomlstrict.PathOf("users", "pattern")) {
			v.add(tomlstrict.PathOf("users", "pattern"), "cannot be used with users.file (the file lists the users)")
		}
	} else {
		v.positiveInt(tomlstrict.PathOf("users", "count"), u.Count)
		v.atMost(tomlstrict.PathOf("users", "count"), u.Count, MaxUsers)
		if rest := strings.ReplaceAll(u.Pattern, "%%", ""); len(patternVerbRE.FindAllString(rest, -1)) != 1 || strings.Count(rest, "%") != 1 {
			v.add(tomlstrict.PathOf("users", "pattern"), "must contain exactly one %%d (or e.g. %%04d) and no other %% verb (got %q)", u.Pattern)
		} else if name := fmt.Sprintf(u.Pattern, 1); strings.ContainsAny(name, " \t\r\n@\"") {
			v.add(tomlstrict.PathOf("users", "pattern"), "must make user names without spaces, quotes or @ (got %q)", u.Pattern)
		}
	}
	if u.PasswordEnv != "" && !envNameRE.MatchString(u.PasswordEnv) {
		// Not echoed: it might be the password itself, put in the wrong key.
		v.add(tomlstrict.PathOf("users", "password_env"), "must be the name of an environment variable, like \"MAILBENCH_PASSWORD\" (the value is not shown)")
	}
	if !validDomain(u.LocalDomain) {
		v.add(tomlstrict.PathOf("users", "local_domain"), "must be a domain name (got %q)", u.LocalDomain)
	}
	if !validDomain(u.RemoteDomain) {
		v.add(tomlstrict.PathOf("users", "remote_domain"), "must be a domain name (got %q)", u.RemoteDomain)
	} else if strings.EqualFold(u.LocalDomain, u.RemoteDomain) {
		v.add(tomlstrict.PathOf("users", "remote_domain"), "must differ from users.local_domain (got %q)", u.RemoteDomain)
	}

}

// LoadConfig is the target arrival rate and the generator's bounds.
type LoadConfig struct {
	// SessionsPerHour is the target. When zero it is
	// Users.Count × SessionsPerUserHour.
	SessionsPerHour     float64  `toml:"sessions_per_hour"`
	SessionsPerUserHour float64  `toml:"sessions_per_user_hour"` // default 4.8
	MaxConcurrent       int      `toml:"max_concurrent_sessions"`
	LateTolerance       Duration `toml:"late_tolerance"`      // a session starting later than this is late
	OpTimeout           Duration `toml:"op_timeout"`          // deadline of every network operation
	ThinkTime           Duration `toml:"think_time"`          // mean of the exponential think time
	InboundPerSession   float64  `toml:"inbound_per_session"` // background inbound messages per session
	// SourceAddresses are the local IP addresses the sessions' connections
	// to the server under test come from, in turn: each has its own range
	// of ephemeral ports, so that one generator is not capped at one
	// address's. Empty: the system chooses.
	SourceAddresses []string `toml:"source_addresses"`
	// MaxResponseBytes bounds what one server response may make a client
	// hold: an IMAP response outside its literals, an SMTP reply (all its
	// lines). MaxLiteralBytes bounds an IMAP literal held as a string
	// (FETCH bodies are streamed, whatever their size). A response past
	// either is a protocol error of its operation and ends the connection:
	// a broken or hostile server costs an error, not the generator's
	// memory. Defaults 1 MiB each.
	MaxResponseBytes int `toml:"max_response_bytes"`
	MaxLiteralBytes  int `toml:"max_literal_bytes"`
}

// validate adds the problems of the load section to v and says whether
// its rates are valid (Config.validate checks them against the users).
func (l *LoadConfig) validate(v *validator) (ratesOK bool) {
	rateOK := true
	if v.written(tomlstrict.PathOf("load", "sessions_per_hour")) {
		rateOK = v.number(tomlstrict.PathOf("load", "sessions_per_hour"), l.SessionsPerHour, 0, math.Inf(1), true, true)
	} else if l.SessionsPerHour < 0 || math.IsNaN(l.SessionsPerHour) {
		v.add(tomlstrict.PathOf("load", "sessions_per_hour"), "must be > 0 (got %s)", fmtFloat(l.SessionsPerHour))
		rateOK = false
	}
	rateOK = rateOK && v.atMostFloat(tomlstrict.PathOf("load", "sessions_per_hour"), l.SessionsPerHour, MaxSessionsPerHour)
	perUserOK := v.number(tomlstrict.PathOf("load", "sessions_per_user_hour"), l.SessionsPerUserHour, 0, math.Inf(1), true, true) &&
		v.atMostFloat(tomlstrict.PathOf("load", "sessions_per_user_hour"), l.SessionsPerUserHour, MaxSessionsPerHour)
	v.positiveInt(tomlstrict.PathOf("load", "max_concurrent_sessions"), l.MaxConcurrent)
	v.atMost(tomlstrict.PathOf("load", "max_concurrent_sessions"), l.MaxConcurrent, MaxConcurrentSessions)
	v.duration(tomlstrict.PathOf("load", "late_tolerance"), l.LateTolerance, false)
	v.duration(tomlstrict.PathOf("load", "op_timeout"), l.OpTimeout, true)
	if d := l.OpTimeout.Duration; d > 0 && d < MinOpTimeout {
		v.add(tomlstrict.PathOf("load", "op_timeout"), "%v is below the minimum of %v: no real round trip (connect, TLS, login) is met by it", d, MinOpTimeout)
	}
	for _, b := range []struct {
		key string
		n   int
	}{{"max_response_bytes", l.MaxResponseBytes}, {"max_literal_bytes", l.MaxLiteralBytes}} {
		if b.n < MinResponseBytes || b.n > MaxResponseBytes {
			v.add(tomlstrict.PathOf("load", b.key), "%d is out of range: must be %d to %d bytes", b.n, MinResponseBytes, MaxResponseBytes)
		}
	}
	v.duration(tomlstrict.PathOf("load", "think_time"), l.ThinkTime, false)
	v.atMostDuration(tomlstrict.PathOf("load", "think_time"), l.ThinkTime, MaxThinkTime)
	if v.number(tomlstrict.PathOf("load", "inbound_per_session"), l.InboundPerSession, 0, math.Inf(1), false, true) {
		v.atMostFloat(tomlstrict.PathOf("load", "inbound_per_session"), l.InboundPerSession, MaxInboundPerSession)
	}

	seen := map[string]bool{}
	if !v.atMost(tomlstrict.PathOf("load", "source_addresses"), len(l.SourceAddresses), MaxSourceAddresses) {
		return rateOK && perUserOK
	}
	for i, a := range l.SourceAddresses {
		p := tomlstrict.PathOf("load", "source_addresses").At(i)
		switch ip := net.ParseIP(a); {
		case ip == nil:
			v.add(p, "must be an IP address such as \"127.0.0.2\" (got %q)", a)
		case ip.IsUnspecified() || ip.IsMulticast():
			v.add(p, "must be an address of this machine to connect from (got %q)", a)
		case seen[ip.String()]:
			v.add(p, "%q is listed twice", a)
		}
		if ip := net.ParseIP(a); ip != nil {
			seen[ip.String()] = true
		}
	}
	return rateOK && perUserOK
}

// MaxSourceAddresses bounds load.source_addresses.
const MaxSourceAddresses = 256

// PhasesConfig is the run's timeline.
type PhasesConfig struct {
	Warmup      Duration `toml:"warmup"`
	Measurement Duration `toml:"measurement"`
	Rampdown    Duration `toml:"rampdown"` // grace for running sessions after the last start
	Settle      Duration `toml:"settle"`   // wait for deliveries after ramp-down
}

// validate adds the problems of the phases section to v.
func (phs *PhasesConfig) validate(v *validator) {
	for _, ph := range []struct {
		key      string
		d        Duration
		positive bool
	}{{"warmup", phs.Warmup, false}, {"measurement", phs.Measurement, true}, {"rampdown", phs.Rampdown, false}, {"settle", phs.Settle, false}} {
		v.duration(tomlstrict.PathOf("phases", ph.key), ph.d, ph.positive)
		v.atMostDuration(tomlstrict.PathOf("phases", ph.key), ph.d, MaxPhase)
	}

}

// SessionsConfig weights the five session types and sets their parameters.
type SessionsConfig struct {
	Check   SessionType `toml:"check"`
	Read    SessionType `toml:"read"`
	Cleanup SessionType `toml:"cleanup"`
	Folders SessionType `toml:"folders"`
	Send    SessionType `toml:"send"`
}

// validate adds the problems of the sessions section to v.
func (ss *SessionsConfig) validate(v *validator) {
	var total float64
	weightsOK := true
	for _, st := range ss.types() {
		p := tomlstrict.PathOf("sessions", st.Name)
		if !v.number(p.With("weight"), st.T.Weight, 0, math.Inf(1), false, true) || !v.atMostFloat(p.With("weight"), st.T.Weight, MaxWeight) {
			weightsOK = false
		} else {
			total += st.T.Weight
		}
		if usesFetchCount(st.Name) {
			v.positiveInt(p.With("fetch_count"), st.T.FetchCount)
			v.atMost(p.With("fetch_count"), st.T.FetchCount, MaxMailboxMessages)
		} else if v.written(p.With("fetch_count")) {
			v.add(p.With("fetch_count"), "not used by %s sessions", st.Name)
		}
		if usesBodies(st.Name) {
			v.nonNegativeInt(p.With("bodies_min"), st.T.BodiesMin)
			if st.T.BodiesMax < st.T.BodiesMin {
				v.add(p.With("bodies_max"), "must be >= bodies_min (got %d < %d)", st.T.BodiesMax, st.T.BodiesMin)
			} else {
				v.atMost(p.With("bodies_max"), st.T.BodiesMax, MaxBodies)
			}
		} else {
			for _, k := range []string{"bodies_min", "bodies_max"} {
				if v.written(p.With(k)) {
					v.add(p.With(k), "not used by %s sessions", st.Name)
				}
			}
		}
	}
	if weightsOK && total <= 0 {
		v.add(tomlstrict.PathOf("sessions"), "at least one session type needs a weight > 0")
	}

}

// SessionType is one kind of user session.
type SessionType struct {
	Weight float64 `toml:"weight"`
	// FetchCount is how many of the newest messages a range fetch asks for
	// (check, read, folders). Default 20.
	FetchCount int `toml:"fetch_count"`
	// BodiesMin/BodiesMax bound FETCH_NUM_BODYALL per read session (1-3).
	BodiesMin int `toml:"bodies_min"`
	BodiesMax int `toml:"bodies_max"`
}

// MessagesConfig shapes generated mail.
type MessagesConfig struct {
	Sizes       []SizeShare      `toml:"sizes"`
	Recipients  []RecipientShare `toml:"recipients"`
	RemoteShare float64          `toml:"remote_share"` // probability a recipient is remote (0-1)
}

// validate adds the problems of the messages section to v.
// validateSizes checks a size distribution at p: at least one bucket,
// each size within bounds, shares summing to 100.
func validateSizes(v *validator, p tomlstrict.Path, sizes []SizeShare) {
	if len(sizes) == 0 {
		v.add(p, "must list at least one size")
		return
	}
	var sum float64
	ok := true
	for i, s := range sizes {
		pi := p.At(i)
		if s.Size <= 0 {
			v.add(pi.With("size"), "must be > 0 (got %d)", int64(s.Size))
		} else if s.Size > MaxMessageSize {
			v.add(pi.With("size"), "%s is above the maximum of %s", s.Size, ByteSize(MaxMessageSize))
		}
		ok = v.number(pi.With("share"), s.Share, 0, 100, false, false) && ok
		sum += s.Share
	}
	if ok && math.Abs(sum-100) > 0.01 {
		v.add(p, "shares must sum to 100 (got %s)", fmtFloat(math.Round(sum*1e6)/1e6))
	}
}

// MessageSizes are every size bucket a run may send: messages.sizes and
// the user profiles' own, each once, in that order.
func (c *Config) MessageSizes() []int {
	var out []int
	add := func(ss []SizeShare) {
		for _, s := range ss {
			if !slices.Contains(out, int(s.Size)) {
				out = append(out, int(s.Size))
			}
		}
	}
	add(c.Messages.Sizes)
	for _, g := range c.Groups() {
		add(g.User.Sizes)
	}
	return out
}

func (m *MessagesConfig) validate(v *validator) {
	validateSizes(v, tomlstrict.PathOf("messages", "sizes"), m.Sizes)
	if len(m.Recipients) == 0 {
		v.add(tomlstrict.PathOf("messages", "recipients"), "must list at least one bucket")
	} else {
		var sum float64
		ok := true
		for i, r := range m.Recipients {
			p := tomlstrict.PathOf("messages", "recipients").At(i)
			v.positiveInt(p.With("min"), r.Min)
			if r.Max < r.Min {
				v.add(p.With("max"), "must be >= min (got %d < %d)", r.Max, r.Min)
			} else if r.Max > MaxRecipients {
				v.add(p.With("max"), "must be <= %d (got %d)", MaxRecipients, r.Max)
			}
			ok = v.number(p.With("share"), r.Share, 0, 100, false, false) && ok
			sum += r.Share
		}
		if ok && math.Abs(sum-100) > 0.01 {
			v.add(tomlstrict.PathOf("messages", "recipients"), "shares must sum to 100 (got %s)", fmtFloat(math.Round(sum*1e6)/1e6))
		}
	}
	v.number(tomlstrict.PathOf("messages", "remote_share"), m.RemoteShare, 0, 1, false, false)

}

// SizeShare is one bucket of the message-size distribution.
type SizeShare struct {
	Size  ByteSize `toml:"size"`  // "1KiB", "256KiB", "1MiB" or bytes
	Share float64  `toml:"share"` // percent; shares sum to 100
}

// RecipientShare is one bucket of the recipients-per-message distribution.
type RecipientShare struct {
	Min   int     `toml:"min"`
	Max   int     `toml:"max"`
	Share float64 `toml:"share"` // percent; shares sum to 100
}

// MailboxesConfig is what `mailbench init` creates per user (and what the
// embedded target starts with).
type MailboxesConfig struct {
	InboxMessages     int      `toml:"inbox_messages"`
	Folders           []string `toml:"folders"` // besides INBOX, Sent, Drafts, Trash
	FolderMessagesMin int      `toml:"folder_messages_min"`
	FolderMessagesMax int      `toml:"folder_messages_max"`
	// Sent, Drafts and Trash name the standard mailboxes as the server
	// does ("Sent Items", "INBOX.Sent", ...); send sessions APPEND to Sent.
	Sent   string `toml:"sent"`
	Drafts string `toml:"drafts"`
	Trash  string `toml:"trash"`
	// Delimiter is the server's hierarchy delimiter, as written in the
	// folder names above ("/" by default; "." on Courier-style servers), or
	// AutoDelimiter: the names are written with "/" relative to the server's
	// personal namespace, which is asked before any work (InNamespace).
	Delimiter string `toml:"delimiter"`
}

// validate adds the problems of the mailboxes section to v.
func (mb *MailboxesConfig) validate(v *validator) {
	v.nonNegativeInt(tomlstrict.PathOf("mailboxes", "inbox_messages"), mb.InboxMessages)
	v.atMost(tomlstrict.PathOf("mailboxes", "inbox_messages"), mb.InboxMessages, MaxMailboxMessages)
	d := mb.NameDelimiter()
	if len(d) != 1 || d == " " || d == "*" || d == "%" || d == "\"" {
		v.add(tomlstrict.PathOf("mailboxes", "delimiter"), "must be one character such as \"/\" or \".\", or \"auto\" (got %q)", d)
		d = "/"
	}
	badName := func(f string) bool {
		return strings.TrimSpace(f) == "" || strings.HasPrefix(f, d) || strings.HasSuffix(f, d) || strings.Contains(f, d+d)
	}
	standard := map[string]bool{}
	for _, k := range []struct{ key, name string }{{"sent", mb.Sent}, {"drafts", mb.Drafts}, {"trash", mb.Trash}} {
		p := tomlstrict.PathOf("mailboxes", k.key)
		switch {
		case badName(k.name):
			v.add(p, "must be a mailbox name like \"Sent\" or \"INBOX%sSent\" (got %q)", d, k.name)
		case strings.EqualFold(k.name, "INBOX"):
			v.add(p, "cannot be INBOX")
		case standard[k.name]:
			v.add(p, "%q names another standard mailbox too", k.name)
		}
		standard[k.name] = true
	}
	seen := map[string]bool{}
	folders := mb.Folders
	if !v.atMost(tomlstrict.PathOf("mailboxes", "folders"), len(folders), MaxFolders) {
		folders = nil // one error, not one per folder
	}
	for i, f := range folders {
		p := tomlstrict.PathOf("mailboxes", "folders").At(i)
		switch {
		case badName(f):
			v.add(p, "must be a mailbox name like \"Projects%sAlpha\" (got %q)", d, f)
		case strings.EqualFold(f, "INBOX") || standard[f]:
			v.add(p, "%q is always created; list only extra folders", f)
		case seen[f]:
			v.add(p, "duplicate folder %q", f)
		}
		seen[f] = true
	}
	v.nonNegativeInt(tomlstrict.PathOf("mailboxes", "folder_messages_min"), mb.FolderMessagesMin)
	if v.atMost(tomlstrict.PathOf("mailboxes", "folder_messages_min"), mb.FolderMessagesMin, MaxMailboxMessages) {
		if mb.FolderMessagesMax < mb.FolderMessagesMin {
			v.add(tomlstrict.PathOf("mailboxes", "folder_messages_max"), "must be >= folder_messages_min (got %d < %d)", mb.FolderMessagesMax, mb.FolderMessagesMin)
		} else {
			v.atMost(tomlstrict.PathOf("mailboxes", "folder_messages_max"), mb.FolderMessagesMax, MaxMailboxMessages)
		}
	}

}

// Standard lists the standard mailboxes besides INBOX: Sent, Drafts, Trash.
func (m MailboxesConfig) Standard() []string { return []string{m.Sent, m.Drafts, m.Trash} }

// ComplianceConfig holds the limits. Functions overrides the defaults per
// function name (exact names of the SPECmail2008 table).
type ComplianceConfig struct {
	Limit            Duration `toml:"limit"`                     // default 5s
	RequiredPercent  float64  `toml:"required_percent"`          // default 95 (strictly greater)
	DeliveryLimit    Duration `toml:"delivery_limit"`            // default 60s
	DeliveryRequired float64  `toml:"delivery_required_percent"` // default 95
	MaxErrorPercent  float64  `toml:"max_error_percent"`         // default 1 (strictly less)
	// MaxDroppedPercent bounds the sessions of the measurement window that
	// could not start (generator at its cap, every user busy): a run that
	// did not offer its target load is not compliant. Default 1 (strictly less).
	MaxDroppedPercent float64                  `toml:"max_dropped_percent"`
	Functions         map[string]FunctionLimit `toml:"functions"`
}

// validate adds the problems of the compliance section to v.
func (cc *ComplianceConfig) validate(v *validator) {
	v.duration(tomlstrict.PathOf("compliance", "limit"), cc.Limit, true)
	v.number(tomlstrict.PathOf("compliance", "required_percent"), cc.RequiredPercent, 0, 100, false, true)
	v.duration(tomlstrict.PathOf("compliance", "delivery_limit"), cc.DeliveryLimit, true)
	v.number(tomlstrict.PathOf("compliance", "delivery_required_percent"), cc.DeliveryRequired, 0, 100, false, true)
	v.number(tomlstrict.PathOf("compliance", "max_error_percent"), cc.MaxErrorPercent, 0, 100, true, false)
	v.number(tomlstrict.PathOf("compliance", "max_dropped_percent"), cc.MaxDroppedPercent, 0, 100, true, false)
	names := make([]string, 0, len(cc.Functions))
	for name := range cc.Functions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fl := cc.Functions[name]
		p := tomlstrict.PathOf("compliance", "functions", name)
		if !measure.Known(measure.Function(name)) {
			v.add(p, "unknown function (%s)", suggestFunction(name))
			continue
		}
		v.duration(p.With("limit"), fl.Limit, false)
		v.number(p.With("required_percent"), fl.RequiredPercent, 0, 100, false, true)
	}

}

// FunctionLimit overrides the default limit for one function.
type FunctionLimit struct {
	Limit           Duration `toml:"limit"`
	RequiredPercent float64  `toml:"required_percent"`
}

// DeliveryConfig says how local deliveries are timed.
type DeliveryConfig struct {
	// WatchUsers is how many users' INBOXes are watched for the whole run,
	// each on one dedicated IMAP connection in IDLE (or polled every
	// WatchPoll when the server lacks IDLE), so that their deliveries are
	// timed to the moment the server announced them. Default 16; 0
	// watches none (INTERNALDATE only); at most MaxWatchUsers.
	WatchUsers int `toml:"watch_users"`
	// WatchPoll is the poll interval of a watched INBOX on a server
	// without IDLE, and so the resolution of its delivery times.
	// Default 500ms.
	WatchPoll Duration `toml:"watch_poll"`
}

// validate adds the problems of the delivery section to v.
func (dc *DeliveryConfig) validate(v *validator) {
	if n := dc.WatchUsers; n < 0 || n > MaxWatchUsers {
		v.add(tomlstrict.PathOf("delivery", "watch_users"), "must be 0 to %d (got %d)", MaxWatchUsers, n)
	}
	v.duration(tomlstrict.PathOf("delivery", "watch_poll"), dc.WatchPoll, true)
}

// MaxWatchUsers bounds delivery.watch_users: each is an IMAP connection
// held open for the whole run.
const MaxWatchUsers = 256

// Duration is a time.Duration written as a string ("30s", "1m30s") in TOML.
// A bare integer is rejected: BurntSushi/toml would take it as nanoseconds.
type Duration struct{ time.Duration }

// ByteSize is a size written as "4KiB", "1MiB", "512" or an integer.
type ByteSize int64

// ClientsConfig is the connected population: users whose mail client
// stays connected for the whole run, waiting in IDLE on the INBOX, beside
// the sessions of [sessions] (internal/run/connected).
type ClientsConfig struct {
	// Connected is how many users stay connected: the first ones (a shard
	// connects those of them that are its own); 0: none.
	Connected int `toml:"connected"`
	// Ramp spreads their first connects evenly from the run's start; zero:
	// over the warm-up.
	Ramp Duration `toml:"ramp"`
	// IdleRenew is how long a client stays in one IDLE before renewing it;
	// under RFC 2177's 29 minutes.
	IdleRenew Duration `toml:"idle_renew"`
	// Poll is how often a client looks at the other folders (STATUS); zero:
	// never.
	Poll Duration `toml:"poll"`
	// BackoffMin and BackoffMax bound the wait before a reconnect.
	BackoffMin Duration `toml:"backoff_min"`
	BackoffMax Duration `toml:"backoff_max"`
}

// MaxConnected bounds clients.connected.
const MaxConnected = 1_000_000

// idleLimit is RFC 2177's: a server may end an IDLE after 29 minutes.
const idleLimit = 29 * time.Minute

// validate adds the problems of the clients section to v.
func (cl *ClientsConfig) validate(v *validator) {
	v.nonNegativeInt(tomlstrict.PathOf("clients", "connected"), cl.Connected)
	v.atMost(tomlstrict.PathOf("clients", "connected"), cl.Connected, MaxConnected)
	v.duration(tomlstrict.PathOf("clients", "ramp"), cl.Ramp, false)
	v.atMostDuration(tomlstrict.PathOf("clients", "ramp"), cl.Ramp, MaxPhase)
	v.duration(tomlstrict.PathOf("clients", "idle_renew"), cl.IdleRenew, true)
	if cl.IdleRenew.Duration >= idleLimit {
		v.add(tomlstrict.PathOf("clients", "idle_renew"), "%v is not under RFC 2177's %v: a server may end the IDLE first", cl.IdleRenew.Duration, idleLimit)
	}
	v.duration(tomlstrict.PathOf("clients", "poll"), cl.Poll, false)
	v.duration(tomlstrict.PathOf("clients", "backoff_min"), cl.BackoffMin, true)
	v.duration(tomlstrict.PathOf("clients", "backoff_max"), cl.BackoffMax, true)
	if cl.BackoffMax.Duration < cl.BackoffMin.Duration {
		v.add(tomlstrict.PathOf("clients", "backoff_max"), "must be >= clients.backoff_min (got %v < %v)", cl.BackoffMax.Duration, cl.BackoffMin.Duration)
	}
}
