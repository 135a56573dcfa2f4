package measure

import "time"

// Submission is a message that a server accepted at submission: the
// message id (delivery.NewID), when the server's final reply to DATA
// arrived, and the recipients it accepted, split into local (delivered to an
// INBOX) and remote (relayed to the sink) addresses. Sessions report it;
// the delivery ledger accounts for it and times its deliveries from
// Accepted. It never holds the body.
type Submission struct {
	ID       string
	Accepted time.Time // the final 250 to DATA; zero means now
	Local    []string
	Remote   []string
	Size     int64 // bytes submitted (header and body)
}
