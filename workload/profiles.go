package workload

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
)

// PopulationConfig is [population]: the load as users of a mix of
// profiles (a user profile: how much mail; a client profile: how the mail
// client behaves), as mail administrators describe their users, instead of
// sessions per hour. Without it a run is SPEC's: [load].sessions_per_hour
// of the session scripts, unchanged.
type PopulationConfig struct {
	// Users is how many users the mix has; zero: users.count. The mix's
	// entries take them in order: the first entry users 1..n1, and so on.
	Users int `toml:"users"`
	// Mix is the population's entries by share.
	Mix []MixEntry `toml:"mix"`
}

// MixEntry is one part of the population: a user profile with a client
// profile, and its share of the users.
type MixEntry struct {
	Users  string  `toml:"users"`  // a user profile: light, medium, heavy, spec, or [profiles.users.NAME]
	Client string  `toml:"client"` // a client profile: desktop, mobile, webmail, spec, or [profiles.clients.NAME]
	Share  float64 `toml:"share"`  // relative weight; the shares need not add up to 100
}

// ProfilesConfig holds the profiles a file defines or changes:
// [profiles.users.NAME] and [profiles.clients.NAME]. A profile named as a
// built-in one changes the fields it sets; a new name starts from the one
// its base names (default: medium, desktop).
type ProfilesConfig struct {
	Users   map[string]UserProfileConfig   `toml:"users"`
	Clients map[string]ClientProfileConfig `toml:"clients"`
}

// UserProfileConfig is a user profile as written: nil fields keep the
// base profile's value.
type UserProfileConfig struct {
	Base           string    `toml:"base"`
	SentPerDay     *float64  `toml:"sent_per_day"`
	ReceivedPerDay *float64  `toml:"received_per_day"`
	Read           *float64  `toml:"read"`
	Replied        *float64  `toml:"replied"`
	Deleted        *float64  `toml:"deleted"`
	Moved          *float64  `toml:"moved"`
	Flagged        *float64  `toml:"flagged"`
	Day            *Duration `toml:"day"`
	ActionDelay    *Duration `toml:"action_delay"`
	// Sizes, when set, is the size distribution of the mail the user
	// sends and receives (attachments and all), as messages.sizes.
	Sizes []SizeShare `toml:"sizes"`
}

// ClientProfileConfig is a client profile as written: nil fields keep the
// base profile's value.
type ClientProfileConfig struct {
	Base         string    `toml:"base"`
	Connections  *int      `toml:"connections"`
	Idle         *bool     `toml:"idle"`
	Check        *Duration `toml:"check"`
	Poll         *Duration `toml:"poll"`
	Resync       *string   `toml:"resync"`
	ResyncWindow *int      `toml:"resync_window"`
	ListMessages *int      `toml:"list_messages"`
	FetchList    *string   `toml:"fetch_list"`
	FetchNew     *string   `toml:"fetch_new"`
	FetchOpen    *string   `toml:"fetch_open"`
	Online       *Duration `toml:"online"`
	Offline      *Duration `toml:"offline"`
}

// UserProfile is how much mail a user handles in a working day, and what
// the user does with what arrives. The counts are per day; mailbench
// spreads them evenly over Day, so that an hour of a run is an hour of the
// working day.
type UserProfile struct {
	Name           string
	SentPerDay     float64 // every message the user sends, replies included
	ReceivedPerDay float64 // messages from outside delivered to the user's INBOX (the mail users send each other comes on top)
	// Shares of the received messages: Read are opened (the client's open
	// FETCH); of those, Replied get \Answered (their replies are among
	// SentPerDay) and Flagged get \Flagged; of all received, Deleted are
	// deleted (\Deleted and UID EXPUNGE) and Moved moved to a folder.
	Read, Replied, Deleted, Moved, Flagged float64
	Day                                    time.Duration // the working day
	// ActionDelay is the mean time between the client seeing a new
	// message and the user acting on it (exponential).
	ActionDelay time.Duration
	// Sizes is the size distribution of the user's mail, sent and
	// received; nil: messages.sizes.
	Sizes []SizeShare
	// SPEC marks SPEC's user: sessions at load.sessions_per_user_hour,
	// none of the fields above.
	SPEC bool
}

// Resync modes of a client profile.
const (
	ResyncAuto      = "auto"      // QRESYNC, else CONDSTORE, else flags, as the server offers
	ResyncQResync   = "qresync"   // RFC 7162 QRESYNC (SELECT ... (QRESYNC ...)); CONDSTORE, else flags, when not offered
	ResyncCondStore = "condstore" // RFC 7162 CONDSTORE (FETCH ... (CHANGEDSINCE ...)); flags when not offered
	ResyncFlags     = "flags"     // UID FETCH of the flags of the window
	ResyncNone      = "none"      // no resync (a client without a cache)
)

// ClientProfile is how a user's mail client behaves, as data.
type ClientProfile struct {
	Name string
	// Connections is how many connections the client holds while online:
	// the first on INBOX, the others each on one more folder (Sent, Drafts,
	// Trash, then [mailboxes] folders), each in IDLE when Idle.
	Connections int
	// Idle: wait in IDLE (RFC 2177); else look at the mailbox (NOOP) every
	// Check.
	Idle  bool
	Check time.Duration
	// Poll is how often the client asks the folders it has no connection
	// on for their counts (STATUS each); zero: never.
	Poll time.Duration
	// Resync is what the client does on every connect, after SELECT, to
	// bring its cache up to date; ResyncWindow bounds it to the newest
	// messages (0: all).
	Resync       string
	ResyncWindow int
	// ListMessages is how many of the newest messages the client lists on
	// connect (FetchList); 0: none.
	ListMessages int
	// The FETCH item lists: the message list on connect, a new message
	// when the client is told of it, and a message the user opens.
	FetchList, FetchNew, FetchOpen FetchItems
	// Online is how long a connection stays before the client logs out
	// (0: the whole run); Offline how long it stays away before it
	// connects again.
	Online, Offline time.Duration
	// Source says where the profile's behaviour comes from.
	Source string
	// SPEC marks SPEC's session scripts: no connected client.
	SPEC bool
}

// The FETCH lists of two mail clients, as dovecot/imaptest's profile.conf
// documents them (imap_fetch_immediate, imap_fetch_manual).
const (
	thunderbirdNew  = "UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS (From To Cc Bcc Subject Date Message-ID Priority X-Priority References Newsgroups In-Reply-To Content-Type)]"
	thunderbirdOpen = "RFC822.SIZE BODY[]"
	appleMailNew    = "INTERNALDATE UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS (date subject from to cc message-id in-reply-to references x-priority x-uniform-type-identifier x-universally-unique-identifier)] MODSEQ"
	appleMailOpen   = "BODYSTRUCTURE BODY.PEEK[]"
	// A webmail without a cache lists a page of messages on every login;
	// mailbench's webmail asks what SPEC's FETCH_RANGE asks, not a named
	// product's list.
	webmailList = "UID FLAGS INTERNALDATE RFC822.SIZE ENVELOPE BODY.PEEK[HEADER.FIELDS (Message-ID Content-Type)]"
	webmailOpen = "BODYSTRUCTURE BODY[]"
)

func mustFetch(s string) FetchItems {
	l, err := ParseFetchItems(s)
	if err != nil {
		panic(err)
	}
	return l
}

// BuiltinUserProfiles are the shipped user profiles, by name.
func BuiltinUserProfiles() map[string]UserProfile {
	p := func(name string, sent, received float64) UserProfile {
		return UserProfile{Name: name, SentPerDay: sent, ReceivedPerDay: received,
			Read: 0.8, Replied: 0.1, Deleted: 0.3, Moved: 0.1, Flagged: 0.05,
			Day: 8 * time.Hour, ActionDelay: 3 * time.Minute}
	}
	return map[string]UserProfile{
		// Exchange LoadGen's profiles by messages per day; heavy is its
		// "Heavy" (20 sent, 80 received in an 8-hour day).
		"light":  p("light", 5, 20),
		"medium": p("medium", 10, 40),
		"heavy":  p("heavy", 20, 80),
		"spec":   {Name: "spec", SPEC: true},
	}
}

// BuiltinClientProfiles are the shipped client profiles, by name.
func BuiltinClientProfiles() map[string]ClientProfile {
	return map[string]ClientProfile{
		"desktop": {Name: "desktop", Connections: 2, Idle: true, Poll: 5 * time.Minute,
			Resync: ResyncAuto, ListMessages: 50,
			FetchList: mustFetch(thunderbirdNew), FetchNew: mustFetch(thunderbirdNew), FetchOpen: mustFetch(thunderbirdOpen),
			Source: "Thunderbird's FETCH lists (dovecot/imaptest profile.conf); stays connected, IDLE on INBOX and Sent, STATUS of the other folders every 5 min"},
		"mobile": {Name: "mobile", Connections: 1, Idle: true, Poll: 15 * time.Minute,
			Resync: ResyncAuto, ResyncWindow: 200, ListMessages: 25,
			FetchList: mustFetch(appleMailNew), FetchNew: mustFetch(appleMailNew), FetchOpen: mustFetch(appleMailOpen),
			Online: 10 * time.Minute, Offline: time.Minute,
			Source: "Apple Mail's FETCH lists (dovecot/imaptest profile.conf); one connection, dropped every 10 min (network change, sleep) and back after 1 min with a resync of the newest 200"},
		"webmail": {Name: "webmail", Connections: 1, Idle: false, Check: 30 * time.Second, Poll: 5 * time.Minute,
			Resync: ResyncNone, ListMessages: 50,
			FetchList: mustFetch(webmailList), FetchNew: mustFetch(webmailList), FetchOpen: mustFetch(webmailOpen),
			Online: 5 * time.Minute, Offline: 25 * time.Minute,
			Source: "a webmail without a cache: short sessions (5 min in every 30), lists 50 messages on each, looks for new mail every 30 s (NOOP); not a named product's lists"},
		"spec": {Name: "spec", SPEC: true, Source: "SPECmail2008's session scripts at load.sessions_per_user_hour"},
	}
}

// Group is one entry of the population, resolved: its profiles and its
// users, [First, First+Count) of the users' list.
type Group struct {
	User         UserProfile
	Client       ClientProfile
	Share        float64
	First, Count int
}

// Name is the entry's name, "heavy/desktop".
func (g Group) Name() string { return g.User.Name + "/" + g.Client.Name }

// HourFraction is the share of an hour its users are connected (1 for a
// client that stays).
func (c ClientProfile) HourFraction() float64 {
	if c.Online <= 0 {
		return 1
	}
	return float64(c.Online) / float64(c.Online+c.Offline)
}

// GroupRates is what a group does in an hour of the working day, derived
// from its profiles (none of it is measured).
type GroupRates struct {
	Users            int
	SessionsPerHour  float64 // SPEC's sessions (spec groups only)
	ReceivedPerHour  float64
	SentPerHour      float64
	OpenedPerHour    float64
	ChangedPerHour   float64 // flagged, answered, deleted and moved
	ConnectsPerHour  float64 // client logins (each connection counts)
	ConnectionsHeld  float64 // on average
	PerUserReceived  float64 // per user per hour
	PerUserSent      float64
	PerUserSessions  float64
	PerUserConnected float64 // connections held per user on average
}

// Rates derives the group's hourly rates; sessionsPerUserHour is
// load.sessions_per_user_hour, for spec groups.
func (g Group) Rates(sessionsPerUserHour float64) GroupRates {
	n := float64(g.Count)
	r := GroupRates{Users: g.Count}
	if g.User.SPEC {
		r.PerUserSessions = sessionsPerUserHour
		r.SessionsPerHour = n * sessionsPerUserHour
		return r
	}
	hours := g.User.Day.Hours()
	r.PerUserReceived = g.User.ReceivedPerDay / hours
	r.PerUserSent = g.User.SentPerDay / hours
	r.ReceivedPerHour = n * r.PerUserReceived
	r.SentPerHour = n * r.PerUserSent
	r.OpenedPerHour = r.ReceivedPerHour * g.User.Read
	r.ChangedPerHour = r.OpenedPerHour*(g.User.Replied+g.User.Flagged) + r.ReceivedPerHour*(g.User.Deleted+g.User.Moved)
	c := g.Client
	r.PerUserConnected = float64(c.Connections) * c.HourFraction()
	r.ConnectionsHeld = n * r.PerUserConnected
	if c.Online > 0 {
		r.ConnectsPerHour = n * float64(c.Connections) * float64(time.Hour) / float64(c.Online+c.Offline)
	}
	return r
}

// HasPopulation reports whether the config describes its load as a
// population of profiles.
func (c *Config) HasPopulation() bool { return len(c.Population.Mix) > 0 }

// PopulationUsers is how many users the population has.
func (c *Config) PopulationUsers() int {
	if c.Population.Users > 0 {
		return c.Population.Users
	}
	return c.Users.Count
}

// Groups resolves the population: nil without [population]. The users
// are shared out by largest remainder, so that the counts add up to
// PopulationUsers exactly; the order is the mix's.
func (c *Config) Groups() []Group {
	if !c.HasPopulation() {
		return nil
	}
	users, clients := c.resolveProfiles(nil)
	total := 0.0
	for _, m := range c.Population.Mix {
		total += m.Share
	}
	n := c.PopulationUsers()
	groups := make([]Group, len(c.Population.Mix))
	type rem struct {
		i int
		f float64
	}
	var rems []rem
	given := 0
	for i, m := range c.Population.Mix {
		exact := float64(n) * m.Share / total
		groups[i] = Group{User: users[m.Users], Client: clients[m.Client], Share: m.Share, Count: int(math.Floor(exact))}
		given += groups[i].Count
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
	for k := 0; given < n; k++ {
		groups[rems[k%len(rems)].i].Count++
		given++
	}
	first := 0
	for i := range groups {
		groups[i].First = first
		first += groups[i].Count
	}
	return groups
}

// PopulationConnections is the most connections the population's clients
// hold at once (every user online with all its connections).
func (c *Config) PopulationConnections() int {
	n := 0
	for _, g := range c.Groups() {
		if !g.Client.SPEC {
			n += g.Count * g.Client.Connections
		}
	}
	return n
}

// SPECUsers is how many users of the population run SPEC's sessions (all
// of users.count without [population]).
func (c *Config) SPECUsers() int {
	if !c.HasPopulation() {
		return c.Users.Count
	}
	n := 0
	for _, g := range c.Groups() {
		if g.User.SPEC {
			n += g.Count
		}
	}
	return n
}

// resolveProfiles applies the file's profiles over the built-in ones; v,
// when not nil, is told of the problems.
func (c *Config) resolveProfiles(v *validator) (map[string]UserProfile, map[string]ClientProfile) {
	users, clients := BuiltinUserProfiles(), BuiltinClientProfiles()
	for _, name := range sortedKeys(c.Profiles.Users) {
		pc := c.Profiles.Users[name]
		p := tomlstrict.PathOf("profiles", "users", name)
		base, ok := users[name]
		if pc.Base != "" || !ok {
			b := pc.Base
			if b == "" {
				b = "medium"
			}
			bp, found := BuiltinUserProfiles()[b]
			if !found || bp.SPEC {
				if v != nil {
					v.add(p.With("base"), "must be a built-in user profile: light, medium or heavy (got %q)", b)
				}
				bp = BuiltinUserProfiles()["medium"]
			}
			base = bp
		}
		if base.SPEC {
			if v != nil {
				v.add(p, "the spec profile is SPEC's user (load.sessions_per_user_hour): it has no fields to set")
			}
			continue
		}
		base.Name = name
		setF := func(dst *float64, src *float64) {
			if src != nil {
				*dst = *src
			}
		}
		setF(&base.SentPerDay, pc.SentPerDay)
		setF(&base.ReceivedPerDay, pc.ReceivedPerDay)
		setF(&base.Read, pc.Read)
		setF(&base.Replied, pc.Replied)
		setF(&base.Deleted, pc.Deleted)
		setF(&base.Moved, pc.Moved)
		setF(&base.Flagged, pc.Flagged)
		if pc.Day != nil {
			base.Day = pc.Day.Duration
		}
		if pc.ActionDelay != nil {
			base.ActionDelay = pc.ActionDelay.Duration
		}
		if pc.Sizes != nil {
			base.Sizes = pc.Sizes
			if v != nil {
				validateSizes(v, p.With("sizes"), pc.Sizes)
			}
		}
		if v != nil {
			base.validate(v, p)
		}
		users[name] = base
	}
	for _, name := range sortedKeys(c.Profiles.Clients) {
		pc := c.Profiles.Clients[name]
		p := tomlstrict.PathOf("profiles", "clients", name)
		base, ok := clients[name]
		if pc.Base != "" || !ok {
			b := pc.Base
			if b == "" {
				b = "desktop"
			}
			bp, found := BuiltinClientProfiles()[b]
			if !found || bp.SPEC {
				if v != nil {
					v.add(p.With("base"), "must be a built-in client profile: desktop, mobile or webmail (got %q)", b)
				}
				bp = BuiltinClientProfiles()["desktop"]
			}
			base = bp
		}
		if base.SPEC {
			if v != nil {
				v.add(p, "the spec profile is SPEC's session scripts: it has no fields to set")
			}
			continue
		}
		if base.Name != name {
			base.Source = "[profiles.clients." + name + "] over " + base.Name + ": " + base.Source
		} else {
			base.Source = "[profiles.clients." + name + "] changes the built-in: " + base.Source
		}
		base.Name = name
		if pc.Connections != nil {
			base.Connections = *pc.Connections
		}
		if pc.Idle != nil {
			base.Idle = *pc.Idle
		}
		if pc.Check != nil {
			base.Check = pc.Check.Duration
		}
		if pc.Poll != nil {
			base.Poll = pc.Poll.Duration
		}
		if pc.Resync != nil {
			base.Resync = *pc.Resync
		}
		if pc.ResyncWindow != nil {
			base.ResyncWindow = *pc.ResyncWindow
		}
		if pc.ListMessages != nil {
			base.ListMessages = *pc.ListMessages
		}
		fetch := func(dst *FetchItems, src *string, key string) {
			if src == nil {
				return
			}
			l, err := ParseFetchItems(*src)
			if err != nil {
				if v != nil {
					v.add(p.With(key), "%v", err)
				}
				return
			}
			*dst = l
		}
		fetch(&base.FetchList, pc.FetchList, "fetch_list")
		fetch(&base.FetchNew, pc.FetchNew, "fetch_new")
		fetch(&base.FetchOpen, pc.FetchOpen, "fetch_open")
		if pc.Online != nil {
			base.Online = pc.Online.Duration
		}
		if pc.Offline != nil {
			base.Offline = pc.Offline.Duration
		}
		if v != nil {
			base.validate(v, p)
		}
		clients[name] = base
	}
	return users, clients
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MaxClientConnections bounds a client profile's connections (imaptest's
// connection_max_count is 5 in its examples).
const MaxClientConnections = 8

// maxPerDay bounds the messages of a day.
const maxPerDay = 100_000

func (u UserProfile) validate(v *validator, p tomlstrict.Path) {
	v.number(p.With("sent_per_day"), u.SentPerDay, 0, maxPerDay, false, false)
	v.number(p.With("received_per_day"), u.ReceivedPerDay, 0, maxPerDay, false, false)
	for _, f := range []struct {
		key string
		val float64
	}{{"read", u.Read}, {"replied", u.Replied}, {"deleted", u.Deleted}, {"moved", u.Moved}, {"flagged", u.Flagged}} {
		v.number(p.With(f.key), f.val, 0, 1, false, false)
	}
	if u.Deleted+u.Moved > 1+1e-9 {
		v.add(p.With("moved"), "deleted + moved must be <= 1: a message is deleted or moved, not both (got %s + %s)", fmtFloat(u.Deleted), fmtFloat(u.Moved))
	}
	if u.Day < time.Hour || u.Day > 24*time.Hour {
		v.add(p.With("day"), "must be between 1h and 24h (got %v)", u.Day)
	}
	if u.ActionDelay < 0 || u.ActionDelay > 24*time.Hour {
		v.add(p.With("action_delay"), "must be between 0s and 24h (got %v)", u.ActionDelay)
	}
	if replies := u.ReceivedPerDay * u.Read * u.Replied; replies > u.SentPerDay+1e-9 {
		v.add(p.With("replied"), "the replies (received_per_day × read × replied = %s a day) are among sent_per_day (%s): raise sent_per_day or lower replied", fmtFloat(math.Round(replies*100)/100), fmtFloat(u.SentPerDay))
	}
}

func (c ClientProfile) validate(v *validator, p tomlstrict.Path) {
	if c.Connections < 1 || c.Connections > MaxClientConnections {
		v.add(p.With("connections"), "must be between 1 and %d (got %d)", MaxClientConnections, c.Connections)
	}
	if !c.Idle && c.Check <= 0 {
		v.add(p.With("check"), "must be > 0 for a client without IDLE: it is how often the client looks for new mail (got %v)", c.Check)
	}
	if c.Check < 0 {
		v.add(p.With("check"), "must be >= 0 (got %v)", c.Check)
	}
	if c.Poll < 0 {
		v.add(p.With("poll"), "must be >= 0 (got %v)", c.Poll)
	}
	v.oneOf(p.With("resync"), c.Resync, ResyncAuto, ResyncQResync, ResyncCondStore, ResyncFlags, ResyncNone)
	if c.ResyncWindow < 0 || c.ResyncWindow > 1_000_000 {
		v.add(p.With("resync_window"), "must be between 0 and 1000000 (got %d)", c.ResyncWindow)
	}
	if c.ListMessages < 0 || c.ListMessages > 10_000 {
		v.add(p.With("list_messages"), "must be between 0 and 10000 (got %d)", c.ListMessages)
	}
	if !c.FetchNew.NamesMessageID() {
		v.add(p.With("fetch_new"), "must return the Message-ID (ENVELOPE, BODY.PEEK[HEADER], or HEADER.FIELDS with Message-ID): mailbench knows a delivery by it")
	}
	if c.Online < 0 {
		v.add(p.With("online"), "must be >= 0 (got %v)", c.Online)
	}
	if c.Offline < 0 {
		v.add(p.With("offline"), "must be >= 0 (got %v)", c.Offline)
	}
	if c.Online == 0 && c.Offline > 0 {
		v.add(p.With("offline"), "needs online > 0: a client that never logs out is never away")
	}
	if c.Online > 0 && c.Online < time.Second {
		v.add(p.With("online"), "must be >= 1s (got %v)", c.Online)
	}
}

// validatePopulation checks [population] and the profiles.
func (c *Config) validatePopulation(v *validator) {
	users, clients := c.resolveProfiles(v)
	pp := tomlstrict.PathOf("population")
	if !c.HasPopulation() {
		if v.written(pp.With("users")) {
			v.add(pp.With("users"), "needs population.mix: the mix is what the users are of")
		}
		return
	}
	v.nonNegativeInt(pp.With("users"), c.Population.Users)
	if n := c.PopulationUsers(); c.Users.File == "" && n > c.Users.Count {
		v.add(pp.With("users"), "%d is above users.count (%d): the population is drawn from the users", n, c.Users.Count)
	}
	if len(c.Population.Mix) > 16 {
		v.add(pp.With("mix"), "more than 16 entries")
	}
	seen := map[string]bool{}
	for i, m := range c.Population.Mix {
		p := pp.With("mix").At(i)
		u, okU := users[m.Users]
		cl, okC := clients[m.Client]
		if !okU {
			v.add(p.With("users"), "no user profile %q (built in: light, medium, heavy, spec; or define [profiles.users.%s])", m.Users, m.Users)
		}
		if !okC {
			v.add(p.With("client"), "no client profile %q (built in: desktop, mobile, webmail, spec; or define [profiles.clients.%s])", m.Client, m.Client)
		}
		if okU && okC && u.SPEC != cl.SPEC {
			v.add(p, "users %q with client %q: SPEC's user runs SPEC's sessions; spec goes with spec", m.Users, m.Client)
		}
		v.number(p.With("share"), m.Share, 0, math.Inf(1), true, true)
		key := m.Users + "/" + m.Client
		if seen[key] {
			v.add(p, "%s listed twice", key)
		}
		seen[key] = true
	}
	if v.written(tomlstrict.PathOf("load", "sessions_per_hour")) {
		v.add(tomlstrict.PathOf("load", "sessions_per_hour"), "comes from [population] (its spec users × load.sessions_per_user_hour): remove it, or remove [population]")
	}
}

// describeGroups renders the population for `check`: one line a group,
// per user and per hour of the working day; every figure derived.
func (c *Config) describeGroups() []string {
	var out []string
	for _, g := range c.Groups() {
		r := g.Rates(c.Load.SessionsPerUserHour)
		if g.User.SPEC {
			out = append(out, fmt.Sprintf("%s: %d users × %s sessions/user-hour = %s sessions/hour", g.Name(), g.Count, fmtFloat(r.PerUserSessions), fmtRate(r.SessionsPerHour)))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %d users; a user per hour: %s received from outside, %s sent (of %s and %s a %v day); all: %s received/h, %s sent/h, %s opened/h, %s changed/h, %s connections held, %s logins/h",
			g.Name(), g.Count, fmtRate(r.PerUserReceived), fmtRate(r.PerUserSent), fmtFloat(g.User.ReceivedPerDay), fmtFloat(g.User.SentPerDay), shortDuration(g.User.Day),
			fmtRate(r.ReceivedPerHour), fmtRate(r.SentPerHour), fmtRate(r.OpenedPerHour), fmtRate(r.ChangedPerHour), fmtRate(r.ConnectionsHeld), fmtRate(r.ConnectsPerHour)))
	}
	return out
}

func fmtRate(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
	}
}

func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}
