// Package host reads facts of the machine mailbench runs on.
package host

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// ErrNoMemInfo is returned by AvailableMemory on a system without
// /proc/meminfo's MemAvailable (not Linux, or a kernel before 3.14).
var ErrNoMemInfo = errors.New("the available memory is unknown (no MemAvailable in /proc/meminfo)")

// AvailableMemory returns the machine's available memory in bytes:
// MemAvailable of /proc/meminfo, the memory the kernel can give to a new
// process without swapping. Without it, it returns ErrNoMemInfo.
func AvailableMemory() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, ErrNoMemInfo
	}
	return parseMemAvailable(data)
}

func parseMemAvailable(data []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, ErrNoMemInfo
			}
			if len(f) >= 3 && f[2] == "kB" {
				n *= 1024
			}
			return n, nil
		}
	}
	return 0, ErrNoMemInfo
}
