package workload

import "time"

// DefaultConfig returns the defaults every config file is decoded over: the
// mailbench enterprise profile of docs/config.md. The target has no address:
// a file must name one or set target.embedded. It doesn't perform I/O.
func DefaultConfig() *Config {
	st := func(w float64) SessionType { return SessionType{Weight: w, FetchCount: 20} }
	read := st(25)
	read.BodiesMin, read.BodiesMax = 1, 3
	return &Config{
		Name: "mailbench",
		Seed: 1,
		Target: TargetConfig{
			IMAP: Endpoint{TLS: "none", Auth: "login"},
			SMTP: Endpoint{TLS: "none", Auth: "none"},
		},
		Sink: SinkConfig{
			Enabled:         true,
			Listen:          "127.0.0.1:2526",
			TLS:             "none",
			MaxMessageBytes: 32 << 20,
			MaxRecipients:   100,
		},
		Users: UsersConfig{
			Count:        100,
			Pattern:      "user%d",
			LocalDomain:  "example.test",
			RemoteDomain: "remote.test",
		},
		Load: LoadConfig{
			SessionsPerUserHour: 4.8,
			MaxConcurrent:       1000,
			LateTolerance:       Duration{time.Second},
			OpTimeout:           Duration{30 * time.Second},
			MaxResponseBytes:    1 << 20,
			MaxLiteralBytes:     1 << 20,
			ThinkTime:           Duration{2 * time.Second},
			InboundPerSession:   0.5,
		},
		Phases: PhasesConfig{
			Warmup:      Duration{time.Minute},
			Measurement: Duration{10 * time.Minute},
			Rampdown:    Duration{2 * time.Minute},
			Settle:      Duration{30 * time.Second},
		},
		Sessions: SessionsConfig{
			Check:   st(35),
			Read:    read,
			Cleanup: SessionType{Weight: 10},
			Folders: st(10),
			Send:    SessionType{Weight: 20},
		},
		Messages: MessagesConfig{
			Sizes: []SizeShare{
				{1 * KiB, 20}, {2 * KiB, 20}, {4 * KiB, 20}, {8 * KiB, 15}, {16 * KiB, 10},
				{32 * KiB, 7}, {64 * KiB, 5}, {256 * KiB, 2}, {1 * MiB, 1},
			},
			Recipients:  []RecipientShare{{1, 1, 70}, {2, 2, 15}, {3, 5, 10}, {6, 10, 5}},
			RemoteShare: 0.2,
		},
		Mailboxes: MailboxesConfig{
			InboxMessages:     50,
			Folders:           []string{"Archive", "Projects", "Projects/Alpha"},
			FolderMessagesMin: 10,
			FolderMessagesMax: 40,
			Sent:              "Sent",
			Drafts:            "Drafts",
			Trash:             "Trash",
			Delimiter:         "/",
		},
		Compliance: ComplianceConfig{
			Limit:             Duration{5 * time.Second},
			RequiredPercent:   95,
			DeliveryLimit:     Duration{60 * time.Second},
			DeliveryRequired:  95,
			MaxErrorPercent:   1,
			MaxDroppedPercent: 1,
			Functions:         map[string]FunctionLimit{},
		},
		Delivery: DeliveryConfig{WatchUsers: 16, WatchPoll: Duration{500 * time.Millisecond}},
		Clients:  ClientsConfig{IdleRenew: Duration{25 * time.Minute}, BackoffMin: Duration{time.Second}, BackoffMax: Duration{time.Minute}},
		Server:   ServerConfig{Timeout: Duration{2 * time.Second}},
	}
}
