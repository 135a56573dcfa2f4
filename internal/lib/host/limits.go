package host

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// OpenFileLimit returns the process's soft limit of open file descriptors
// (RLIMIT_NOFILE). Go raises the soft limit to the hard one at start-up,
// so this is what the process may open.
func OpenFileLimit() (int, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur > 1<<31-1 {
		return 1<<31 - 1, nil
	}
	return int(r.Cur), nil
}

// ErrNoPortRange is returned by LocalPorts where the range cannot be read
// (not Linux).
var ErrNoPortRange = errors.New("the local port range is unknown (no /proc/sys/net/ipv4/ip_local_port_range)")

// LocalPorts returns how many local ports one source address can use for
// outgoing connections: the size of net.ipv4.ip_local_port_range.
func LocalPorts() (int, error) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, ErrNoPortRange
	}
	return parsePortRange(string(data))
}

func parsePortRange(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, ErrNoPortRange
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 0, ErrNoPortRange
	}
	return hi - lo + 1, nil
}
