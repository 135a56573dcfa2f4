package workload

import (
	"strings"
	"unicode"

	"github.com/mailbench/mailbench/internal/lib/tomlstrict"
)

// DisclosureConfig is the [disclosure] table: the description of the
// system under test that `mailbench certify` puts into its disclosure
// section, as a SPEC full disclosure report does (one block per system
// role). Every field is free text; none changes how a run is carried out.
// certify requires System to be set (docs/run-rules.md).
type DisclosureConfig struct {
	System       string `toml:"system"`        // the SUT in one line, e.g. "Dovecot 2.3.21 + Postfix 3.8 on 1 VM"
	TestedBy     string `toml:"tested_by"`     // who ran the test
	Hardware     string `toml:"hardware"`      // vendor, model, CPU, memory of the SUT
	Software     string `toml:"software"`      // mail server software and versions
	OS           string `toml:"os"`            // the SUT's operating system and version
	Storage      string `toml:"storage"`       // disk subsystem and file system
	Network      string `toml:"network"`       // between the generator and the SUT
	Tuning       string `toml:"tuning"`        // every setting changed from the defaults
	Notes        string `toml:"notes"`         // anything else a reader needs
	Availability string `toml:"availability"`  // when the hardware and software are (were) available
	Generator    string `toml:"generator"`     // the load generator's machine, if described by hand
	Diagram      string `toml:"configuration"` // the configuration (how the systems are connected)
}

// MaxDisclosureText bounds one [disclosure] field.
const MaxDisclosureText = 16 << 10

// fields lists the table's keys with their values, in file order.
func (d DisclosureConfig) fields() []struct{ Key, Value string } {
	return []struct{ Key, Value string }{
		{"system", d.System}, {"tested_by", d.TestedBy}, {"hardware", d.Hardware}, {"software", d.Software},
		{"os", d.OS}, {"storage", d.Storage}, {"network", d.Network}, {"tuning", d.Tuning},
		{"notes", d.Notes}, {"availability", d.Availability}, {"generator", d.Generator}, {"configuration", d.Diagram},
	}
}

// Fields returns the non-empty fields as key/value pairs in the table's
// order. It doesn't perform I/O.
func (d DisclosureConfig) Fields() [][2]string {
	var out [][2]string
	for _, f := range d.fields() {
		if strings.TrimSpace(f.Value) != "" {
			out = append(out, [2]string{f.Key, f.Value})
		}
	}
	return out
}

// validateDisclosure checks every field: at most MaxDisclosureText bytes
// and no control characters but line breaks and tabs.
func (v *validator) validateDisclosure(d DisclosureConfig) {
	for _, f := range d.fields() {
		p := tomlstrict.PathOf("disclosure", f.Key)
		if len(f.Value) > MaxDisclosureText {
			v.add(p, "%d bytes is above the maximum of %d", len(f.Value), MaxDisclosureText)
			continue
		}
		if strings.ContainsFunc(f.Value, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
			v.add(p, "must not contain control characters other than line breaks and tabs")
		}
	}
}

// ArrivalSeed is the seed of the arrival schedules and the sessions'
// choices: ScheduleSeed when set, else Seed. It doesn't perform I/O.
func (c *Config) ArrivalSeed() int64 {
	if c.ScheduleSeed != 0 {
		return c.ScheduleSeed
	}
	return c.Seed
}
