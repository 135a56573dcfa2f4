// Package status draws the one-line status of a run, a campaign's runs and
// a job (init, clean) on the terminal: redrawn in place on a TTY, a plain
// line every so often otherwise. Frame is what one line shows and Render
// lays it out in a width; Display owns the terminal.
//
// The line is a view, not a result: every figure on it is recomputed in the
// report from exact counts.
package status

import (
	"fmt"
	"strings"
	"time"
)

// Frame is one status line's content. The zero value of a field means
// "not known" and hides it.
type Frame struct {
	// Step names the campaign run this frame belongs to ("sweep run 3/6");
	// empty for a lone run or a job.
	Step string
	// Phase is the run's phase (warmup, measurement, rampdown, settle) or
	// the job's name (init, clean).
	Phase string
	// Elapsed is the time into the run or job; Left the time until its end
	// (settle: until its deadline); Left < 0 is unknown.
	Elapsed, Left time.Duration

	// The run's figures.
	PerHour       float64 // sessions/hour achieved in the measurement so far (0 before it)
	TargetPerHour float64 // sessions/hour asked
	OpsPerSecond  float64 // since the last frame
	Errors        []ClassCount
	Worst         *Worst // the worst p95 against its limit over the last interval
	Late, Dropped int64
	Active        int64 // sessions running
	// Connected and ConnectedTarget are the connected clients held and
	// asked for; 0 target: none asked.
	Connected, ConnectedTarget int64
	Awaiting                   int64 // deliveries not found yet (settle)

	// A job's figures: Done of Total Units, at Rate per second.
	Done, Total int64
	Unit        string
	Rate        float64
}

// ClassCount is the failures of one class.
type ClassCount struct {
	Class string
	Count int64
}

// Worst is the function whose p95 stood highest against its limit.
type Worst struct {
	Function   string
	P95, Limit time.Duration
}

// part is one field of the line; a lower rank is dropped first when the
// line does not fit.
type part struct {
	text  string
	rank  int
	short string // a shorter form tried before any part is dropped; "" none
}

// Render lays f out in at most width columns (runes): it drops the fields
// of least rank until the line fits, and cuts the last one as a last
// resort. It doesn't perform I/O.
func (f Frame) Render(width int) string {
	parts := f.parts()
	if runeLen(join(parts)) > width {
		for i := range parts {
			if parts[i].short != "" {
				parts[i].text = parts[i].short
			}
		}
	}
	for {
		line := join(parts)
		if runeLen(line) <= width || len(parts) <= 1 {
			return cut(line, width)
		}
		// Drop the lowest-ranked part, the rightmost of equals.
		low := 0
		for i, p := range parts {
			if p.rank <= parts[low].rank {
				low = i
			}
		}
		parts = append(parts[:low], parts[low+1:]...)
	}
}

func (f Frame) parts() []part {
	var ps []part
	head := phaseWord(f.Phase)
	if f.Step != "" {
		head = f.Step + " " + head
	}
	if f.Left >= 0 {
		head += " " + clock(f.Left) + " left"
	} else {
		head += " " + clock(f.Elapsed)
	}
	ps = append(ps, part{text: head, rank: 9})
	if f.Total > 0 || f.Unit != "" { // a job
		pct := 100.0
		if f.Total > 0 {
			pct = 100 * float64(f.Done) / float64(f.Total)
		}
		if f.Total > 0 {
			ps = append(ps, part{text: fmt.Sprintf("%s/%s %s (%.0f%%)", Count(f.Done), Count(f.Total), f.Unit, pct), rank: 8})
		} else {
			ps = append(ps, part{text: Count(f.Done) + " " + f.Unit, rank: 8})
		}
		ps = append(ps, part{text: fmt.Sprintf("%s/s", Count(int64(f.Rate+0.5))), rank: 5})
		return ps
	}
	if f.Phase == "settle" {
		ps = append(ps, part{text: fmt.Sprintf("awaiting %s deliveries", Count(f.Awaiting)), rank: 8})
	}
	switch {
	case f.PerHour > 0 && f.TargetPerHour > 0:
		ps = append(ps, part{text: fmt.Sprintf("%s/h of %s", Count(int64(f.PerHour+0.5)), Count(int64(f.TargetPerHour+0.5))), rank: 7})
	case f.TargetPerHour > 0 && f.Phase != "settle":
		ps = append(ps, part{text: fmt.Sprintf("target %s/h", Count(int64(f.TargetPerHour+0.5))), rank: 3})
	}
	if f.Phase != "settle" {
		ps = append(ps, part{text: fmt.Sprintf("%s ops/s", Count(int64(f.OpsPerSecond+0.5))), rank: 5})
	}
	ps = append(ps, f.errorsPart())
	if w := f.Worst; w != nil {
		sep, rank := "/", 6
		if w.P95 > w.Limit {
			sep, rank = " OVER ", 7
		}
		ps = append(ps, part{text: fmt.Sprintf("p95 %s %s%s%s", ShortFunction(w.Function), Millis(w.P95), sep, Millis(w.Limit)), rank: rank})
	}
	if f.Late > 0 || f.Dropped > 0 {
		ps = append(ps, part{text: fmt.Sprintf("late %s dropped %s", Count(f.Late), Count(f.Dropped)), rank: 7})
	}
	if f.ConnectedTarget > 0 {
		ps = append(ps, part{text: fmt.Sprintf("clients %s/%s", Count(f.Connected), Count(f.ConnectedTarget)), rank: 4})
	}
	if f.Phase != "settle" {
		ps = append(ps, part{text: fmt.Sprintf("active %s", Count(f.Active)), rank: 1})
	}
	return ps
}

// errorsPart is the errors field: failures outrank everything but the
// phase; "errors 0" is worth less.
func (f Frame) errorsPart() part {
	var total int64
	var by []string
	for _, c := range f.Errors {
		if c.Count == 0 {
			continue
		}
		total += c.Count
		by = append(by, c.Class+" "+Count(c.Count))
	}
	if total == 0 {
		return part{text: "0 errors", rank: 6}
	}
	return part{text: fmt.Sprintf("%s errors (%s)", Count(total), strings.Join(by, ", ")), rank: 8, short: Count(total) + " errors"}
}

func join(ps []part) string {
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.text
	}
	return strings.Join(texts, " · ")
}

// ShortFunction is a function's name cut to fit a status line: the
// protocol word dropped, and a long command name cut after its first two
// words ("FETCH_RANGE…").
func ShortFunction(fn string) string {
	name := strings.TrimPrefix(strings.TrimPrefix(fn, "IMAP "), "SMTP ")
	if name != fn && !strings.ContainsRune(name, '_') && len(name) < 8 {
		name = fn // "SMTP Data", "IMAP LIST": the protocol word is half the name
	}
	words := strings.Split(name, "_")
	if len(words) > 2 && len(name) > 16 {
		return strings.Join(words[:2], "_") + "…"
	}
	return name
}

// Millis renders a duration tightly for the line, two figures or more:
// "0.42ms", "2.1ms", "12ms", "5s".
func Millis(d time.Duration) string {
	switch {
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

// phaseWord is how the line names a run's phase: a word a reader takes in
// at a glance (the reports keep the phases' spellings).
func phaseWord(phase string) string {
	switch phase {
	case "warmup":
		return "warm-up"
	case "measurement":
		return "measuring"
	case "rampdown":
		return "ramp-down"
	case "settle":
		return "settling"
	}
	return phase
}

// Count renders n with thousands separators.
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// clock renders d as m:ss, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func runeLen(s string) int { return len([]rune(s)) }

// cut shortens s to width runes, marking the cut with "…".
func cut(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	if width <= 1 {
		return string(r[:max(width, 0)])
	}
	return string(r[:width-1]) + "…"
}
