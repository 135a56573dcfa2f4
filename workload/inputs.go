package workload

import "time"

// Upper bounds of the values that size a run. Validate, ParseConfig and
// CheckInputs reject a value above its bound, naming the bound, before any
// work starts: such a value would overflow a computation or exhaust memory
// rather than describe a real run. The bounds are far above real use (a
// sizing run of 100,000 users and tens of millions of sessions per hour
// passes).
const (
	// MaxUsers bounds users.count and the users listed in users.file.
	MaxUsers = 10_000_000
	// MaxSessionsPerHour bounds load.sessions_per_hour,
	// load.sessions_per_user_hour and the rate they derive,
	// users.count × load.sessions_per_user_hour.
	MaxSessionsPerHour = 1e9
	// MaxConcurrentSessions bounds load.max_concurrent_sessions.
	MaxConcurrentSessions = 1_000_000
	// MaxInboundPerSession bounds load.inbound_per_session.
	MaxInboundPerSession = 1000
	// MaxThinkTime bounds load.think_time, the mean pause between steps.
	MaxThinkTime = time.Hour
	// MaxPhase bounds each of phases.warmup, measurement, rampdown and
	// settle.
	MaxPhase = 30 * 24 * time.Hour
	// MaxMailboxMessages bounds mailboxes.inbox_messages,
	// folder_messages_min and folder_messages_max (messages per mailbox and
	// user), and sessions.*.fetch_count.
	MaxMailboxMessages = 100_000
	// MaxFolders bounds the length of mailboxes.folders.
	MaxFolders = 1000
	// MaxBodies bounds sessions.read.bodies_max, the bodies one read
	// session fetches.
	MaxBodies = 1000
	// MaxMessageSize bounds messages.sizes[].size.
	MaxMessageSize = 256 * MiB
	// MaxWeight bounds sessions.*.weight (weights are relative).
	MaxWeight = 1e6
	// MaxConfigBytes bounds the size of a config file.
	MaxConfigBytes = 1 << 20
)
