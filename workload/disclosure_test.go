package workload

import (
	"strings"
	"testing"
)

func TestDisclosureParsed(t *testing.T) {
	src := "[target]\nembedded = true\n\n[disclosure]\nsystem = \"Dovecot 2.3 on one VM\"\ntuning = \"\"\"\nmail_fsync = never\n\"\"\"\n"
	c, err := ParseConfig("d.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Disclosure.System != "Dovecot 2.3 on one VM" || !strings.Contains(c.Disclosure.Tuning, "mail_fsync") {
		t.Errorf("disclosure %+v", c.Disclosure)
	}
	if f := c.Disclosure.Fields(); len(f) != 2 || f[0][0] != "system" || f[1][0] != "tuning" {
		t.Errorf("Fields() = %q", f)
	}
}

func TestDisclosureControlCharacters(t *testing.T) {
	src := "[target]\nembedded = true\n\n[disclosure]\nsystem = \"a\\u0007b\"\n"
	_, err := ParseConfig("d.toml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "d.toml:5: disclosure.system: must not contain control characters") {
		t.Fatalf("error %v", err)
	}
}

func TestArrivalSeed(t *testing.T) {
	c := DefaultConfig()
	c.Seed = 5
	if c.ArrivalSeed() != 5 {
		t.Error("ArrivalSeed without ScheduleSeed")
	}
	c.ScheduleSeed = 9
	if c.ArrivalSeed() != 9 || c.Seed != 5 {
		t.Error("ScheduleSeed")
	}
}
