package workload

import (
	"fmt"
	"math"
)

// SocketEstimate is what a run is expected to hold open at once, in file
// descriptors of the process and in connections to one server address from
// one source address (each takes a local ephemeral port, and every source
// address has its own range: load.source_addresses spreads them). Like
// MemoryEstimate it is an estimate from the plan, not a measurement: Expected
// is for the sessions Little's law expects open (twice it), AtCap for the
// generator's concurrency caps, which an overloaded server can reach.
type SocketEstimate struct {
	Expected int `json:"descriptors_expected"` // file descriptors
	AtCap    int `json:"descriptors_at_cap"`
	// Connections to one server address from one source address.
	ConnectionsExpected int `json:"connections_expected"`
	ConnectionsAtCap    int `json:"connections_at_cap"`
}

// socketsFixed covers what a run opens whatever its size: listeners (the
// sink, the embedded target's two), the sink's incoming relay connections,
// the IMAP checker, the output files, the runtime's own (epoll, pipes).
const socketsFixed = 128

// socketsPerSession: a session holds at most one IMAP and one SMTP
// connection at once (a send session's SMTP transaction and its APPEND to
// Sent come one after the other, but count both).
const socketsPerSession = 2

// Sockets estimates the run's descriptors and connections per server
// address. With the embedded target, the other end of every connection is
// in the process too. It doesn't perform I/O.
func (p *Plan) Sockets() SocketEstimate {
	in := p.mem
	inboundCap := max(in.maxConcurrent/4, 1)
	expected := min(float64(in.maxConcurrent), math.Ceil(2*p.Concurrency)+1) +
		min(float64(inboundCap), math.Ceil(2*p.InboundConcurrency)+1)
	atCap := float64(in.maxConcurrent + inboundCap)
	ends := 1
	if in.embedded {
		ends = 2
	}
	watch := float64(in.watchUsers + in.connected) // one connection each for the whole run
	fds := func(sessions float64) int {
		return int(min((sessions*socketsPerSession+watch)*float64(ends)+socketsFixed, math.MaxInt32))
	}
	sources := float64(max(in.sourceAddrs, 1))
	conns := func(sessions float64) int { return int(min(math.Ceil((sessions+watch)/sources), math.MaxInt32)) }
	return SocketEstimate{Expected: fds(expected), AtCap: fds(atCap), ConnectionsExpected: conns(expected), ConnectionsAtCap: conns(atCap)}
}

// String renders the estimate for the plan: "~310 descriptors (at the
// caps 2,640), ~90 connections per server address (at the caps 1,250)".
func (s SocketEstimate) String() string {
	return fmt.Sprintf("~%s descriptors (at the caps %s), ~%s connections per server and source address (at the caps %s)",
		fmtNum(float64(s.Expected)), fmtNum(float64(s.AtCap)), fmtNum(float64(s.ConnectionsExpected)), fmtNum(float64(s.ConnectionsAtCap)))
}

// CheckSockets compares the estimate with the process's descriptor limit
// (RLIMIT_NOFILE) and the local port range (ports; one source address):
// the error, when the expected load does not fit, names the limit and how
// to raise it; warnings say what an overloaded server could hit at the
// caps, where mailbench's own limit, not the server, would fail
// connections. A limit <= 0 is unknown and not checked.
func (s SocketEstimate) CheckSockets(fdLimit, ports int) (warnings []string, err error) {
	if fdLimit > 0 && s.Expected > fdLimit {
		return nil, fmt.Errorf("the run needs an estimated %s file descriptors and the process may open %s (RLIMIT_NOFILE): raise it (ulimit -n %d; LimitNOFILE= for a systemd unit; the container runtime's nofile ulimit in Kubernetes), or lower load.max_concurrent_sessions or the rate",
			fmtNum(float64(s.Expected)), fmtNum(float64(fdLimit)), s.Expected)
	}
	if ports > 0 && s.ConnectionsExpected > ports {
		return nil, fmt.Errorf("the run needs an estimated %s connections to one server address from one source address and the local port range holds %s ports (net.ipv4.ip_local_port_range): widen it (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"), spread the connections over more source addresses (load.source_addresses), or lower the rate",
			fmtNum(float64(s.ConnectionsExpected)), fmtNum(float64(ports)))
	}
	if fdLimit > 0 && s.AtCap > fdLimit {
		warnings = append(warnings, fmt.Sprintf("at its concurrency caps the run could need %s file descriptors, above this process's %s (RLIMIT_NOFILE): an overloaded server would then meet mailbench's limit (connections failing with \"too many open files\"), not its own; raise it (ulimit -n %d) or lower load.max_concurrent_sessions",
			fmtNum(float64(s.AtCap)), fmtNum(float64(fdLimit)), s.AtCap))
	}
	if ports > 0 && s.ConnectionsAtCap > ports {
		warnings = append(warnings, fmt.Sprintf("at its concurrency caps the run could hold %s connections to one server address, above the %s local ports (net.ipv4.ip_local_port_range): an overloaded server would then meet mailbench's port limit, not its own",
			fmtNum(float64(s.ConnectionsAtCap)), fmtNum(float64(ports))))
	}
	return warnings, nil
}
