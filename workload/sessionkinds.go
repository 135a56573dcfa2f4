package workload

// SessionKind is one of the five session types of workload.md.
type SessionKind string

const (
	Check   SessionKind = "check"
	Read    SessionKind = "read"
	Cleanup SessionKind = "cleanup"
	Folders SessionKind = "folders"
	Send    SessionKind = "send"
	// Inbound is the background stream of remote senders delivering to
	// local users. It is timed but not counted as a user session.
	Inbound SessionKind = "inbound"
)

// SessionKinds lists the user session types in report order.
var SessionKinds = []SessionKind{Check, Read, Cleanup, Folders, Send}

// Type returns the configuration of kind k.
func (s *SessionsConfig) Type(k SessionKind) SessionType {
	switch k {
	case Check:
		return s.Check
	case Read:
		return s.Read
	case Cleanup:
		return s.Cleanup
	case Folders:
		return s.Folders
	case Send:
		return s.Send
	}
	return SessionType{}
}
