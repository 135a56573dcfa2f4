// Package measure defines what one timed operation is: the named functions of
// the SPECmail2008 summary table, the classes of error an operation can end
// in, and the Observation record that clients hand to an Observer.
//
// It is the vocabulary shared by the protocol clients (imapclient, smtpclient),
// the recorder and the compliance table. It doesn't perform I/O.
package measure

import "time"

// Function is a timed function, named exactly as in the SPECmail2008 table.
type Function string

// The fourteen SPECmail2008 functions, and mailbench's delivery-time rows.
const (
	SMTPConnect      Function = "SMTP Connect"
	SMTPData         Function = "SMTP Data"
	IMAPAppend       Function = "IMAP APPEND"
	IMAPConnect      Function = "IMAP Connect"
	IMAPExpunge      Function = "IMAP EXPUNGE"
	IMAPFetchBody    Function = "IMAP FETCH_NUM_BODYALL"
	IMAPFetchRange   Function = "IMAP FETCH_RANGE_ENVELOPE_BODYPEEK_HEADERFIELDS_FLAGS_INTERNALDATE_RFC822SIZE_UID"
	IMAPList         Function = "IMAP LIST"
	IMAPLsub         Function = "IMAP LSUB_NULL_WILDCARD"
	IMAPSelectFolder Function = "IMAP SELECT_FOLDER"
	IMAPSelectInbox  Function = "IMAP SELECT_INBOX"
	IMAPStore        Function = "IMAP STORE_NUM_SET_FLAGS_DELETED"
	IMAPUIDStore     Function = "IMAP UID_STORE_NUM_SET_FLAGS_DELETED"
	IMAPUIDFetch     Function = "IMAP UID_FETCH_RANGE_UID_BODYPEEK_HEADERFIELDS_FLAGS_RFC822SIZE"

	DeliveryLocal  Function = "Delivery Time (local)"
	DeliveryRemote Function = "Delivery Time (remote)"

	// mailbench's own functions, not SPEC's: the connected clients of
	// [clients]. IMAPIdle is the IDLE command's round trip (to the
	// server's continuation); NewMailNotification the time from the SMTP
	// acceptance of a message to the EXISTS that told a connected client
	// of it, a delivery time like DeliveryLocal.
	IMAPIdle            Function = "IMAP IDLE"
	NewMailNotification Function = "New-mail notification"

	// The client profiles' actions ([population]), each as the user waits
	// for it: ClientConnect from the dial to the end of SELECT; ClientResync
	// the cache's update after it (CONDSTORE's CHANGEDSINCE, or the flags
	// of a UID window); ClientList the message list's FETCH; ClientNewMail
	// the FETCH of new messages (the profile's fetch_new); ClientOpen the
	// FETCH of a message the user opens (fetch_open); ClientChange a flag,
	// move or delete (UID STORE, UID MOVE, UID EXPUNGE); ClientStatus one
	// STATUS of a folder; ClientSend a message's submission, from the dial
	// to the 250 after DATA.
	ClientConnect Function = "Client connect"
	ClientResync  Function = "Client resync on connect"
	ClientList    Function = "Client message list"
	ClientNewMail Function = "Client fetch new mail"
	ClientOpen    Function = "Client open message"
	ClientChange  Function = "Client flag/move/delete"
	ClientStatus  Function = "Client folder status"
	ClientSend    Function = "Client send"
)

// ClientFunctions are the connected clients' timed functions, in table
// order.
var ClientFunctions = []Function{IMAPIdle, NewMailNotification,
	ClientConnect, ClientResync, ClientList, ClientNewMail, ClientOpen, ClientChange, ClientStatus, ClientSend}

// IsDelivery reports whether f times mail rather than an operation of the
// server: the delivery times and the new-mail notification. They are not
// operations that fail, so they stay out of the error rate.
func IsDelivery(f Function) bool {
	return f == DeliveryLocal || f == DeliveryRemote || f == NewMailNotification
}

// SPECFunctions lists the fourteen timed functions of the SPECmail2008
// summary table in the table's order.
var SPECFunctions = []Function{
	SMTPConnect, SMTPData, IMAPAppend, IMAPConnect, IMAPExpunge, IMAPFetchBody,
	IMAPFetchRange, IMAPList, IMAPLsub, IMAPSelectFolder, IMAPSelectInbox,
	IMAPStore, IMAPUIDStore, IMAPUIDFetch,
}

// AllFunctions is SPECFunctions followed by the delivery-time functions and
// the connected clients' functions.
var AllFunctions = append(append(append([]Function(nil), SPECFunctions...), DeliveryLocal, DeliveryRemote), ClientFunctions...)

// Known reports whether f is one of AllFunctions.
func Known(f Function) bool {
	for _, g := range AllFunctions {
		if g == f {
			return true
		}
	}
	return false
}

// ErrorClass says how an operation failed. The empty class means success.
type ErrorClass string

const (
	OK         ErrorClass = ""
	Timeout    ErrorClass = "timeout"    // our deadline or watchdog fired
	Connection ErrorClass = "connection" // refused, reset, closed, EOF
	Protocol   ErrorClass = "protocol"   // NO/BAD, SMTP 4xx/5xx, unexpected reply
	Auth       ErrorClass = "auth"       // the server refused the credentials: IMAP LOGIN/AUTHENTICATE NO, SMTP AUTH 5xx
	TLS        ErrorClass = "tls"        // handshake, certificate, version
	Integrity  ErrorClass = "integrity"  // corrupted or duplicated message
	Other      ErrorClass = "other"

	// Cancelled is an operation that mailbench itself cut short: the end of
	// ramp-down, a Ctrl-C, a run abandoned. It is not a failure of the
	// server: it is counted apart (metrics.FunctionStats.Cancelled), never
	// in Errors, the error rate or the operations of a compliance row.
	Cancelled ErrorClass = "cancelled"
)

// ErrorClasses lists the failure classes in report order. Cancelled is
// not one: it is not a failure.
var ErrorClasses = []ErrorClass{Timeout, Connection, Protocol, Auth, TLS, Integrity, Other}

// Observation is one timed operation.
type Observation struct {
	Function Function
	Start    time.Time     // when the operation started (wall clock, monotonic)
	Duration time.Duration // how long it took, including a failure
	Class    ErrorClass    // OK on success
	Err      error         // the failure, nil on success; never holds a password
	// Connect, set only on IMAP Connect and SMTP Connect observations that
	// got as far as a TCP connection, breaks the connect time down.
	Connect *ConnectPhases
}

// ConnectPhases splits one connect into its parts; imapclient and
// smtpclient fill it as the connect proceeds and put it in the observation
// (Client.Breakdown returns it too). Durations of parts not reached (a
// failure before TLS, say) or not done (no TLS) are zero. TCP, TLS, Greeting
// and Auth add up to the whole connect except for scheduling slack;
// StartTLS and EHLO are parts of TLS and Greeting, not additional to them.
type ConnectPhases struct {
	TCP time.Duration // TCP connect (dial)
	// TLS is the TLS handshake, implicit or after STARTTLS; with STARTTLS it
	// includes the STARTTLS exchange (IMAP: also the capability list
	// requested after the handshake).
	TLS time.Duration
	// Greeting is the IMAP greeting (plus the CAPABILITY command go-imap
	// sends when the greeting carries no [CAPABILITY] code), or the SMTP
	// banner plus EHLO.
	Greeting time.Duration
	// Auth is LOGIN, AUTHENTICATE or SMTP AUTH (IMAP: plus the CAPABILITY
	// command go-imap sends after it when the OK carries no [CAPABILITY]).
	Auth    time.Duration
	TLSUsed bool // a TLS handshake completed
	Resumed bool // the TLS handshake resumed an earlier session (tls.ConnectionState.DidResume)

	// StartTLS is the part of TLS spent on the clear-text exchange before
	// the handshake (SMTP: EHLO and STARTTLS); 0 without STARTTLS and on
	// IMAP, which doesn't split it out.
	StartTLS time.Duration
	// EHLO is the part of Greeting spent on the EHLO that follows the banner
	// (SMTP; after the handshake with STARTTLS); 0 on IMAP.
	EHLO time.Duration

	// The TLS attribution (docs/tls.md, "The 40 ms after the handshake").
	// Handshake is the TLS handshake alone, a part of TLS. FirstExchange is
	// the first exchange after it (SMTP: the EHLO; IMAP STARTTLS: the
	// CAPABILITY; IMAP implicit TLS: the greeting and any CAPABILITY), a
	// part of TLS (IMAP STARTTLS) or of Greeting. ClearExchange is the last
	// clear-text exchange before the handshake, the STARTTLS command and its
	// reply (0 with implicit TLS): the same server's cost of a tiny
	// exchange, against which a stall in FirstExchange shows.
	Handshake, FirstExchange, ClearExchange time.Duration
}

// Stall thresholds: a TLS connect's first exchange after the handshake
// stalled when it took at least StallMin and at least StallRatio times the
// same connection's clear-text STARTTLS exchange. A delayed ACK holds a
// segment 40 ms on Linux (TCP_DELACK_MIN) and up to 200 ms elsewhere; a
// tiny exchange on loopback takes well under a millisecond.
const (
	StallMin   = 35 * time.Millisecond
	StallRatio = 10
)

// Stalled reports whether p's first exchange after the TLS handshake
// stalled (see StallMin), and assessed whether p could tell: a completed
// STARTTLS handshake (implicit TLS has no clear-text exchange to compare
// with) whose first exchange was timed. It doesn't perform I/O.
func (p ConnectPhases) Stalled() (stalled, assessed bool) {
	if !p.TLSUsed || p.ClearExchange <= 0 || p.FirstExchange <= 0 {
		return false, false
	}
	return p.FirstExchange >= StallMin && p.FirstExchange >= StallRatio*p.ClearExchange, true
}

// Observer receives observations. Implementations must be safe for
// concurrent use: every simulated session calls Observe from its own goroutine.
type Observer interface {
	Observe(Observation)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(Observation)

// Observe calls f(o).
func (f ObserverFunc) Observe(o Observation) { f(o) }

// Discard is an Observer that drops every observation.
var Discard Observer = ObserverFunc(func(Observation) {})
