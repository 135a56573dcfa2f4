package workload

import (
	"strings"
	"testing"
)

// TestLimits feeds one value at a time at and beyond its maximum: above,
// the exact error naming the maximum; at it and at sizing-run values, no
// error.
func TestLimits(t *testing.T) {
	const head = "[target]\nembedded = true\n"
	tests := []struct {
		name, src, want string
	}{
		{"users", "[users]\ncount = 1000000000000\n", "l.toml:4: users.count: 1000000000000 is above the maximum of 10000000"},
		{"users at max", "[users]\ncount = 10000000\n[load]\nsessions_per_hour = 1e7\n", ""},
		{"sizing run", "[users]\ncount = 100000\n[load]\nsessions_per_hour = 5e7\nmax_concurrent_sessions = 200000\n", ""},
		{"sizing run derived rate", "[users]\ncount = 100000\n[load]\nsessions_per_user_hour = 480\n", ""},
		{"rate", "[load]\nsessions_per_hour = 1e15\n", "l.toml:4: load.sessions_per_hour: 1000000000000000 is above the maximum of 1000000000"},
		{"rate at max", "[load]\nsessions_per_hour = 1e9\n", ""},
		{"rate huge", "[load]\nsessions_per_hour = 1.7e308\n", "l.toml:4: load.sessions_per_hour: 1.7e+308 is above the maximum of 1000000000"},
		{"per-user rate", "[load]\nsessions_per_user_hour = 1e12\n", "l.toml:4: load.sessions_per_user_hour: 1000000000000 is above the maximum of 1000000000"},
		{"derived rate", "[users]\ncount = 10000000\n[load]\nsessions_per_user_hour = 101\n",
			"l.toml:6: load.sessions_per_user_hour: users.count × sessions_per_user_hour = 1010000000 sessions/hour is above the maximum of 1000000000 (set load.sessions_per_hour or fewer users)"},
		{"derived rate, explicit rate wins", "[users]\ncount = 10000000\n[load]\nsessions_per_user_hour = 101\nsessions_per_hour = 1e6\n", ""},
		{"concurrency", "[load]\nmax_concurrent_sessions = 1000001\n", "l.toml:4: load.max_concurrent_sessions: 1000001 is above the maximum of 1000000"},
		{"think time", "[load]\nthink_time = \"61m\"\n", "l.toml:4: load.think_time: 1h1m0s is above the maximum of 1h0m0s"},
		{"think time at max", "[load]\nthink_time = \"1h\"\n", ""},
		{"inbound", "[load]\ninbound_per_session = 1001\n", "l.toml:4: load.inbound_per_session: 1001 is above the maximum of 1000"},
		{"phase", "[phases]\nwarmup = \"721h\"\n", "l.toml:4: phases.warmup: 721h0m0s is above the maximum of 720h0m0s"},
		{"phase overflow sum", "[phases]\nmeasurement = \"2562047h\"\nsettle = \"2562047h\"\n",
			"l.toml:4: phases.measurement: 2562047h0m0s is above the maximum of 720h0m0s\nl.toml:5: phases.settle: 2562047h0m0s is above the maximum of 720h0m0s"},
		{"inbox", "[mailboxes]\ninbox_messages = 50000000\n", "l.toml:4: mailboxes.inbox_messages: 50000000 is above the maximum of 100000"},
		{"inbox at max", "[mailboxes]\ninbox_messages = 100000\n", ""},
		{"folder messages", "[mailboxes]\nfolder_messages_max = 100001\n", "l.toml:4: mailboxes.folder_messages_max: 100001 is above the maximum of 100000"},
		{"folder messages min", "[mailboxes]\nfolder_messages_min = 9000000000\nfolder_messages_max = 9000000000\n", "l.toml:4: mailboxes.folder_messages_min: 9000000000 is above the maximum of 100000"},
		{"folders", "[mailboxes]\nfolders = [" + strings.Repeat("\"f\",", 1001) + "]\n", "l.toml:4: mailboxes.folders: 1001 is above the maximum of 1000"},
		{"fetch count", "[sessions.check]\nfetch_count = 4294967297\n", "l.toml:4: sessions.check.fetch_count: 4294967297 is above the maximum of 100000"},
		{"bodies", "[sessions.read]\nbodies_max = 1001\n", "l.toml:4: sessions.read.bodies_max: 1001 is above the maximum of 1000"},
		{"weight", "[sessions.send]\nweight = 1e308\n", "l.toml:4: sessions.send.weight: 1e+308 is above the maximum of 1000000"},
		{"size", "[[messages.sizes]]\nsize = \"1GiB\"\nshare = 100\n", "l.toml:4: messages.sizes[0].size: 1GiB is above the maximum of 256MiB"},
		{"size at max", "[[messages.sizes]]\nsize = \"256MiB\"\nshare = 100\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("l.toml", []byte(head+tt.src))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestLimitsInCode checks that a Config changed in code after loading (as
// the command line's --users and --rate do) meets the same maximums.
func TestLimitsInCode(t *testing.T) {
	c := DefaultConfig()
	c.Target.Embedded = true
	c.Users.Count = 1_000_000_000_000
	c.Load.SessionsPerHour = 1e15
	want := "load.sessions_per_hour: 1000000000000000 is above the maximum of 1000000000\nusers.count: 1000000000000 is above the maximum of 10000000"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want:\n%s", err, want)
	}
}
