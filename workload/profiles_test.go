package workload

import (
	"strings"
	"testing"
	"time"
)

func TestParseFetchItems(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "uid flags rfc822.size", want: "UID FLAGS RFC822.SIZE"},
		{in: "BODY.PEEK[HEADER.FIELDS (From To)]", want: "BODY.PEEK[HEADER.FIELDS (From To)]"},
		{in: "body[1.2.MIME] BODY[2]<0.1024> BODY.PEEK[]", want: "BODY[1.2.MIME] BODY[2]<0.1024> BODY.PEEK[]"},
		{in: "BODY[TEXT]  MODSEQ", want: "BODY[TEXT] MODSEQ"},
		{in: "", err: "no items"},
		{in: "UID UID", err: "UID listed twice"},
		{in: "RFC822", err: `"RFC822" is not a FETCH item`},
		{in: "BODY", err: "BODY needs a section"},
		{in: "BODY[HEADER.FIELDS]", err: "needs field names"},
		{in: "BODY[HEADER.FIELDS From]", err: "in parentheses"},
		{in: "BODY[MIME]", err: "MIME needs a part"},
		{in: "BODY[0]", err: "part numbers start at 1"},
		{in: "BODY[TEXT", err: "no closing ]"},
		{in: "BODY[]<5>", err: "<offset.count>"},
		{in: "BODY[]x", err: "unexpected"},
		{in: "BODY[HEADER.FIELDS (a:b)]", err: "not a header field name"},
	} {
		got, err := ParseFetchItems(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, got.String(), err, tc.want)
		}
	}
}

func TestNamesMessageID(t *testing.T) {
	for in, want := range map[string]bool{
		"UID ENVELOPE":                              true,
		"BODY.PEEK[HEADER]":                         true,
		"BODY[]":                                    true,
		"BODY.PEEK[HEADER.FIELDS (message-id)]":     true,
		"BODY.PEEK[HEADER.FIELDS (From)]":           false,
		"BODY.PEEK[HEADER.FIELDS.NOT (Received)]":   true,
		"BODY.PEEK[HEADER.FIELDS.NOT (Message-Id)]": false,
		"BODY.PEEK[1.HEADER]":                       false,
		"BODY.PEEK[]<0.100>":                        false,
		"UID FLAGS":                                 false,
	} {
		if got := mustFetch(in).NamesMessageID(); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// The users of a mix add up exactly, in the mix's order, and the rates
// follow the profiles.
func TestGroups(t *testing.T) {
	c := DefaultConfig()
	c.Users.Count = 1000
	c.Population = PopulationConfig{Users: 101, Mix: []MixEntry{
		{Users: "spec", Client: "spec", Share: 1}, {Users: "heavy", Client: "desktop", Share: 1}, {Users: "light", Client: "mobile", Share: 1},
	}}
	gs := c.Groups()
	if len(gs) != 3 || gs[0].Count+gs[1].Count+gs[2].Count != 101 || gs[1].First != gs[0].Count || gs[2].First != gs[0].Count+gs[1].Count {
		t.Fatalf("groups %+v", gs)
	}
	if c.SPECUsers() != gs[0].Count || c.TargetRate() != float64(gs[0].Count)*c.Load.SessionsPerUserHour {
		t.Errorf("spec users %d, rate %v", c.SPECUsers(), c.TargetRate())
	}
	r := gs[1].Rates(4.8)
	if want := float64(gs[1].Count) * 80 / 8; r.ReceivedPerHour != want || r.ConnectionsHeld != float64(2*gs[1].Count) || r.ConnectsPerHour != 0 {
		t.Errorf("heavy/desktop rates %+v", r)
	}
	m := gs[2].Rates(4.8)
	// mobile: one connection, online 10 of every 11 minutes.
	if want := float64(gs[2].Count) * float64(time.Hour) / float64(11*time.Minute); m.ConnectsPerHour != want {
		t.Errorf("mobile logins %v, want %v", m.ConnectsPerHour, want)
	}
}

// Every built-in client profile is valid, and knows its deliveries.
func TestBuiltinProfilesValid(t *testing.T) {
	for name, c := range BuiltinClientProfiles() {
		if c.SPEC {
			continue
		}
		v := &validator{}
		c.validate(v, nil)
		if len(v.errs) > 0 {
			t.Errorf("%s: %v", name, v.errs)
		}
	}
	for name, u := range BuiltinUserProfiles() {
		if u.SPEC {
			continue
		}
		v := &validator{}
		u.validate(v, nil)
		if len(v.errs) > 0 {
			t.Errorf("%s: %v", name, v.errs)
		}
	}
}

// FuzzParseFetchItems: any text parses or is refused, never a panic, and
// a list that parses is written back as text that parses to the same list.
func FuzzParseFetchItems(f *testing.F) {
	for _, s := range []string{thunderbirdNew, appleMailNew, webmailList, "BODY[1.2.MIME]<0.10>", "UID", "BODY.PEEK[HEADER.FIELDS.NOT (Received)]", "body[text", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseFetchItems(s)
		if err != nil {
			return
		}
		again, err := ParseFetchItems(l.String())
		if err != nil || again.String() != l.String() {
			t.Fatalf("%q parsed as %q, which parses as %q, %v", s, l.String(), again.String(), err)
		}
	})
}
