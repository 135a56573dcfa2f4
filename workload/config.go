package workload

import (
	"time"

	"github.com/mailbench/mailbench/internal/tomlstrict"
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
}

// PhasesConfig is the run's timeline.
type PhasesConfig struct {
	Warmup      Duration `toml:"warmup"`
	Measurement Duration `toml:"measurement"`
	Rampdown    Duration `toml:"rampdown"` // grace for running sessions after the last start
	Settle      Duration `toml:"settle"`   // wait for deliveries after ramp-down
}

// SessionsConfig weights the five session types and sets their parameters.
type SessionsConfig struct {
	Check   SessionType `toml:"check"`
	Read    SessionType `toml:"read"`
	Cleanup SessionType `toml:"cleanup"`
	Folders SessionType `toml:"folders"`
	Send    SessionType `toml:"send"`
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

// MaxWatchUsers bounds delivery.watch_users: each is an IMAP connection
// held open for the whole run.
const MaxWatchUsers = 256

// Duration is a time.Duration written as a string ("30s", "1m30s") in TOML.
// A bare integer is rejected: BurntSushi/toml would take it as nanoseconds.
type Duration struct{ time.Duration }

// ByteSize is a size written as "4KiB", "1MiB", "512" or an integer.
type ByteSize int64
