package status

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// frames are the lines a run, a campaign and a job draw, one of each
// kind of moment.
var frames = []struct {
	name string
	f    Frame
}{
	{"warm-up", Frame{Phase: "warmup", Elapsed: 7 * time.Second, Left: 73 * time.Second, TargetPerHour: 3600, OpsPerSecond: 4.2, Active: 2}},
	{"measurement", Frame{Phase: "measurement", Elapsed: 29 * time.Second, Left: 51 * time.Second, PerHour: 3512.4, TargetPerHour: 3600, OpsPerSecond: 41.6,
		Worst: &Worst{Function: "IMAP SELECT_INBOX", P95: 12300 * time.Microsecond, Limit: 5 * time.Second}, Active: 3}},
	{"measurement failing", Frame{Phase: "measurement", Elapsed: 2*time.Hour + 3*time.Minute, Left: 57 * time.Minute, PerHour: 227500, TargetPerHour: 245000, OpsPerSecond: 1812,
		Errors: []ClassCount{{"timeout", 212}, {"connection", 4}, {"protocol", 0}},
		Worst:  &Worst{Function: "IMAP FETCH_RANGE_ENVELOPE_BODYPEEK_HEADERFIELDS_FLAGS_INTERNALDATE_RFC822SIZE_UID", P95: 6200 * time.Millisecond, Limit: 5 * time.Second},
		Late:   31, Dropped: 1204, Active: 512, Connected: 9800, ConnectedTarget: 10000}},
	{"ramp-down", Frame{Phase: "rampdown", Elapsed: 82 * time.Second, Left: 8 * time.Second, PerHour: 3600, TargetPerHour: 3600, OpsPerSecond: 3, Active: 1}},
	{"settle", Frame{Phase: "settle", Elapsed: 12 * time.Second, Left: 53 * time.Second, Awaiting: 17, Errors: []ClassCount{{"timeout", 2}}}},
	{"campaign step", Frame{Step: "sweep run 3/6", Phase: "measurement", Elapsed: 40 * time.Second, Left: 50 * time.Second, PerHour: 11800, TargetPerHour: 12000, OpsPerSecond: 140,
		Worst: &Worst{Function: "SMTP Data", P95: 41 * time.Millisecond, Limit: 5 * time.Second}, Active: 9}},
	{"init", Frame{Phase: "init", Elapsed: 65 * time.Second, Left: 35 * time.Second, Done: 65000, Total: 100000, Unit: "messages", Rate: 1000}},
	{"clean, unknown end", Frame{Phase: "clean", Elapsed: 3 * time.Second, Left: -1, Done: 12, Unit: "users", Rate: 4}},
}

// TestFramesGolden renders every frame at 120, 80 and 50 columns against
// testdata/frames.golden, and checks that no line exceeds its width.
func TestFramesGolden(t *testing.T) {
	var b bytes.Buffer
	for _, width := range []int{120, 80, 50} {
		fmt.Fprintf(&b, "== %d columns\n", width)
		for _, fr := range frames {
			line := fr.f.Render(width)
			if n := utf8.RuneCountInString(line); n > width {
				t.Errorf("%s at %d columns: %d runes: %q", fr.name, width, n, line)
			}
			fmt.Fprintf(&b, "%-20s|%s|\n", fr.name, line)
		}
	}
	golden := filepath.Join("testdata", "frames.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("frames differ from %s (go test -update to accept):\n%s", golden, b.String())
	}
}

// TestRenderDropsLeastFirst: as the width shrinks, the fields go in rank
// order and the phase and time stay.
func TestRenderDropsLeastFirst(t *testing.T) {
	f := frames[2].f
	wide := f.Render(1000)
	for _, s := range []string{"active 512", "clients 9,800/10,000", "late 31 dropped 1,204", "216 errors (timeout 212, connection 4)", "p95 FETCH_RANGE… 6.2s OVER 5s"} {
		if !strings.Contains(wide, s) {
			t.Errorf("wide line lacks %q: %s", s, wide)
		}
	}
	narrow := f.Render(60)
	if strings.Contains(narrow, "active") || !strings.HasPrefix(narrow, "measuring 57:00 left") || !strings.Contains(narrow, "216 errors") {
		t.Errorf("60 columns: %q", narrow)
	}
	if got := f.Render(10); got != "measuring…" {
		t.Errorf("10 columns: %q", got)
	}
}

func TestShortFunction(t *testing.T) {
	for in, want := range map[string]string{
		"IMAP SELECT_INBOX": "SELECT_INBOX",
		"IMAP FETCH_RANGE_ENVELOPE_BODYPEEK_HEADERFIELDS_FLAGS_INTERNALDATE_RFC822SIZE_UID": "FETCH_RANGE…",
		"SMTP Data":                        "SMTP Data",
		"IMAP LIST":                        "IMAP LIST",
		"Delivery Time (remote)":           "Delivery Time (remote)",
		"IMAP STORE_NUM_SET_FLAGS_DELETED": "STORE_NUM…",
	} {
		if got := ShortFunction(in); got != want {
			t.Errorf("ShortFunction(%q) = %q, want %q", in, got, want)
		}
	}
}
