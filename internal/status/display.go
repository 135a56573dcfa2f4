package status

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailbench/mailbench/internal/lib/textfit"
)

// DefaultWidth is the width assumed when the terminal's is unknown.
const DefaultWidth = 80

// PlainEvery is how often a Display that is not on a terminal prints its
// line: often enough to see a run move in a CI log, rarely enough to read.
const PlainEvery = 10 * time.Second

// Display shows frames on w: on a terminal the line is redrawn in place
// (carriage return, then erase to the end of the line) and log lines
// written through Log scroll above it; elsewhere a frame is printed as a
// plain line at most every PlainEvery. It is safe for concurrent use.
type Display struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	width func() int
	now   func() time.Time

	drawn     bool      // the status line is on the screen (tty)
	lastPlain time.Time // when the last plain line was printed
	step      string    // the campaign step named by the last log line
	partial   []byte    // a log write without its newline yet
}

// NewDisplay returns a Display on w, a terminal when w is one.
func NewDisplay(w io.Writer) *Display {
	tty, width := Terminal(w)
	return &Display{w: w, tty: tty, width: width, now: time.Now}
}

// NewDisplayFor returns a Display on w that treats w as a terminal of the
// given width when tty is true (tests).
func NewDisplayFor(w io.Writer, tty bool, width int, now func() time.Time) *Display {
	return &Display{w: w, tty: tty, width: func() int { return width }, now: now}
}

// Show draws f. The step named by the last log line is put in front of
// a frame that names none.
func (d *Display) Show(f Frame) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.Step == "" {
		f.Step = d.step
	}
	if d.tty {
		// One column spare: a line that fills the last column wraps on
		// some terminals, and the next \r would then redraw the wrong row.
		fmt.Fprintf(d.w, "\r%s\x1b[K", f.Render(d.width()-1))
		d.drawn = true
		return
	}
	now := d.now()
	if !d.lastPlain.IsZero() && now.Sub(d.lastPlain) < PlainEvery {
		return
	}
	d.lastPlain = now
	fmt.Fprintln(d.w, f.Render(d.width()))
}

// Clear erases the status line (tty), so that what follows starts on a
// clean line.
func (d *Display) Clear() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
}

func (d *Display) clear() {
	if d.tty && d.drawn {
		io.WriteString(d.w, "\r\x1b[K")
		d.drawn = false
	}
}

// stepLine recognises a campaign's log line "sweep: run 3/6: ...",
// "size: run 4: ..." or "certify: run 2/9: ...": its command and run
// become the step in front of the next frames.
var stepLine = regexp.MustCompile(`^([a-z][a-z-]*): run (\d+(?:/\d+)?)\b`)

// Log returns a writer for notices: each line is printed above the status
// line, which the next frame redraws, wrapped to a terminal's width
// (textfit).
func (d *Display) Log() io.Writer { return logWriter{d} }

type logWriter struct{ d *Display }

func (l logWriter) Write(p []byte) (int, error) {
	d := l.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	d.partial = append(d.partial, p...)
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		line := d.partial[:i+1]
		if m := stepLine.FindSubmatch(line); m != nil {
			d.step = string(m[1]) + " run " + string(m[2])
		}
		text := string(line)
		if d.tty { // a file or a pipe keeps each line whole, for grep
			text = textfit.Line(strings.TrimSuffix(text, "\n"), d.width()) + "\n"
		}
		if _, err := io.WriteString(d.w, text); err != nil {
			return 0, err
		}
		d.partial = d.partial[i+1:]
	}
	if len(d.partial) == 0 {
		d.partial = nil
	}
	return len(p), nil
}

// Terminal reports whether w is a terminal and returns a function giving
// its width now (it follows a resize): the terminal's own, else $COLUMNS,
// else DefaultWidth. A writer that is not a terminal gets $COLUMNS or
// DefaultWidth.
func Terminal(w io.Writer) (tty bool, width func() int) {
	f, ok := w.(*os.File)
	tty = ok && isTerminal(f)
	return tty, func() int {
		if tty {
			if cols := terminalWidth(f); cols > 0 {
				return cols
			}
		}
		if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
			return n
		}
		return DefaultWidth
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && terminalWidth(f) >= 0
}
