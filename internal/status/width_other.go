//go:build !unix

package status

import "os"

// terminalWidth is unknown here: every writer is treated as a plain one.
func terminalWidth(*os.File) int { return -1 }
