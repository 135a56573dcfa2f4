package status

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDisplayTTY: a terminal gets the line redrawn in place, and a log
// line erases it, prints, and the next frame draws it again under it; the
// campaign step of the log line shows in front of the frames.
func TestDisplayTTY(t *testing.T) {
	var b bytes.Buffer
	d := NewDisplayFor(&b, true, 81, time.Now)
	d.Show(Frame{Phase: "warmup", Elapsed: time.Second, Left: 9 * time.Second})
	d.Show(Frame{Phase: "warmup", Elapsed: 2 * time.Second, Left: 8 * time.Second})
	fmt.Fprintf(d.Log(), "sweep: run 2/5: level 40%%\n")
	d.Show(Frame{Phase: "measurement", Elapsed: 3 * time.Second, Left: 7 * time.Second})
	d.Clear()
	want := "\rwarm-up 0:09 left · 0 ops/s · 0 errors · active 0\x1b[K" +
		"\rwarm-up 0:08 left · 0 ops/s · 0 errors · active 0\x1b[K" +
		"\r\x1b[Ksweep: run 2/5: level 40%\n" +
		"\rsweep run 2/5 measuring 0:07 left · 0 ops/s · 0 errors · active 0\x1b[K" +
		"\r\x1b[K"
	if got := b.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestDisplayPlain: not a terminal, a frame is a line at most every
// PlainEvery, and log lines pass through whole, even when written in parts.
func TestDisplayPlain(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(1000, 0)
	d := NewDisplayFor(&b, false, 80, func() time.Time { return now })
	for i := range 25 {
		d.Show(Frame{Phase: "measurement", Elapsed: time.Duration(i) * time.Second, Left: -1})
		now = now.Add(time.Second)
	}
	w := d.Log()
	w.Write([]byte("size: run 4: 3,000"))
	w.Write([]byte(" sessions/hour\n"))
	got := b.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 4 || lines[0] != "measuring 0:00 · 0 ops/s · 0 errors · active 0" ||
		!strings.HasPrefix(lines[1], "measuring 0:10") || !strings.HasPrefix(lines[2], "measuring 0:20") ||
		lines[3] != "size: run 4: 3,000 sessions/hour" {
		t.Errorf("plain output:\n%s", got)
	}
	if strings.Contains(got, "\r") || strings.Contains(got, "\x1b") {
		t.Errorf("control characters in plain output: %q", got)
	}
}

// TestDisplayWrapsLogOnATerminal: a long notice is wrapped at spaces to a
// terminal's width, and left whole elsewhere.
func TestDisplayWrapsLogOnATerminal(t *testing.T) {
	long := "mailbench: --metrics-listen and --ignore-memory-budget act where the runs are carried out: give them to each generator\n"
	var tty, plain bytes.Buffer
	fmt.Fprint(NewDisplayFor(&tty, true, 60, time.Now).Log(), long)
	fmt.Fprint(NewDisplayFor(&plain, false, 60, time.Now).Log(), long)
	if plain.String() != long {
		t.Errorf("plain: %q", plain.String())
	}
	lines := strings.Split(strings.TrimSuffix(tty.String(), "\n"), "\n")
	if len(lines) < 2 || strings.Join(strings.Fields(tty.String()), " ") != strings.Join(strings.Fields(long), " ") {
		t.Errorf("tty: %q", tty.String())
	}
	for _, l := range lines {
		if len([]rune(l)) > 60 {
			t.Errorf("a line of %d: %q", len([]rune(l)), l)
		}
	}
}
