//go:build unix

package status

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth is f's width in columns; -1 when f is no terminal, 0 when
// the terminal does not say.
func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return -1
	}
	return int(ws.Col)
}
