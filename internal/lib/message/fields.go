package message

import "github.com/mailbench/mailbench/internal/lib/msgsum"

// The trace header fields every generated message carries; the IMAP
// client and the sink read them back to account for each delivery.
const (
	HeaderID   = "X-Mailbench-Id"   // the message's id (delivery.NewID)
	HeaderSent = "X-Mailbench-Sent" // when the sender stamped it, RFC 3339 with nanoseconds
	HeaderSum  = msgsum.Header      // the body checksum
)

// FieldNameIs reports whether the header field name b is name, ASCII
// case-insensitively, as header field names compare. It doesn't allocate.
func FieldNameIs(b []byte, name string) bool {
	if len(b) != len(name) {
		return false
	}
	for i := range b {
		x, y := b[i], name[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
