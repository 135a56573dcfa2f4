package demo

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/gosmtp"
)

// SMTP replies of the target.
var (
	errUnknownUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "Recipient address rejected: user unknown"}
	errRelayDenied = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relay access denied"}
	errBadAddress  = &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Bad recipient address syntax"}
	errQueueFull   = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Relay queue full, try again later"}
	errLocalFailed = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Local delivery failed, try again later"}
)

// smtpBackend creates one session per SMTP connection.
type smtpBackend struct{ t *Target }

func (b smtpBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &smtpSession{t: b.t, conn: c, done: b.t.act.begin()}, nil
}

// smtpSession is one SMTP connection's transaction state. go-smtp calls its
// methods from the connection's goroutine only.
type smtpSession struct {
	t    *Target
	conn *smtp.Conn
	done func() // counts the session out of Target.Active

	from   string
	size   int64 // MAIL's SIZE= (0: not given): the message buffer is reserved from it
	local  []*account
	remote []string
}

var (
	_ smtp.Session     = (*smtpSession)(nil)
	_ smtp.AuthSession = (*smtpSession)(nil)
)

func (s *smtpSession) Reset() {
	s.from, s.size, s.local, s.remote = "", 0, nil, nil
}

// Logout ends the session (QUIT, the connection closing, or STARTTLS).
func (s *smtpSession) Logout() error {
	if s.done != nil {
		s.done()
	}
	return nil
}

// Mail accepts any sender.
func (s *smtpSession) Mail(from string, opts *smtp.MailOptions) error {
	s.t.commandDelay("MAIL")
	s.from = from
	s.size = 0
	if opts != nil {
		s.size = opts.Size
	}
	return nil
}

// dataBuffer returns a buffer holding hdr with room for a message of size
// bytes (MAIL's SIZE=; at most presizeCap reserved) and the bytes.MinRead
// that ReadFrom wants free before its last read. It doesn't perform I/O.
func dataBuffer(hdr []byte, size int64) *bytes.Buffer {
	buf := bytes.NewBuffer(make([]byte, 0, len(hdr)+int(min(max(size, 0), presizeCap))+bytes.MinRead))
	buf.Write(hdr)
	return buf
}

// presizeCap bounds what MAIL's SIZE= alone reserves: a client announcing
// more gets a buffer that grows as it sends.
const presizeCap = 1 << 20

// Rcpt accepts known local users and, when a relay is configured, any
// address in another domain.
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.t.commandDelay("RCPT")
	local, domain, ok := splitAddress(to)
	if !ok || local == "" || domain == "" {
		s.t.counters.rejected.Add(1)
		return errBadAddress
	}
	if strings.EqualFold(domain, s.t.opts.LocalDomain) {
		acc := s.t.byAddress[strings.ToLower(to)]
		if acc == nil {
			s.t.counters.rejected.Add(1)
			return errUnknownUser
		}
		for _, a := range s.local {
			if a == acc {
				return nil // one delivery per mailbox, as MTAs do
			}
		}
		s.local = append(s.local, acc)
		return nil
	}
	if s.t.relay == nil {
		s.t.counters.rejected.Add(1)
		return errRelayDenied
	}
	s.remote = append(s.remote, to)
	return nil
}

// Data reads the message, prepends a Received header line, hands remote
// recipients to the relay queue (451 when it is full, before anything is
// delivered) and then delivers to every local recipient's INBOX.
func (s *smtpSession) Data(r io.Reader) error {
	// One buffer for the Received header and the message, reserved from
	// MAIL's SIZE= (capped), instead of io.ReadAll's doubling from 512
	// bytes and a copy behind the header.
	buf := dataBuffer(s.receivedHeader(), s.size)
	_, err := buf.ReadFrom(r)
	s.t.commandDelay("DATA")
	if err != nil {
		return err
	}
	msg := buf.Bytes()
	if len(s.remote) > 0 {
		job := &relayJob{from: s.from, rcpts: append([]string(nil), s.remote...), msg: msg}
		if !s.t.relay.tryEnqueue(job) {
			s.t.counters.deferred.Add(1)
			return errQueueFull
		}
	}
	var failed bool
	for _, acc := range s.local {
		if err := s.t.deliverLocal(acc, msg); err != nil {
			failed = true
		}
	}
	if failed {
		return errLocalFailed
	}
	return nil
}

// receivedHeader renders the trace line the target prepends to every
// message it accepts. Only header lines are prepended, so the body (and any
// checksum over it) is unchanged.
func (s *smtpSession) receivedHeader() []byte {
	helo, ip, tls := "", "", false
	if s.conn != nil {
		helo = s.conn.Hostname()
		if addr, ok := s.conn.Conn().RemoteAddr().(*net.TCPAddr); ok {
			ip = addr.IP.String()
		}
		_, tls = s.conn.TLSConnectionState()
	}
	return receivedHeader(helo, ip, s.t.opts.LocalDomain, tls, time.Now())
}

// receivedHeader renders a Received header field (RFC 5321 section 4.4)
// folded over three CRLF-terminated lines. It doesn't perform I/O.
func receivedHeader(helo, ip, by string, tls bool, at time.Time) []byte {
	if helo == "" {
		helo = "unknown"
	}
	if ip == "" {
		ip = "unknown"
	}
	proto := "ESMTP"
	if tls {
		proto = "ESMTPS"
	}
	return fmt.Appendf(nil, "Received: from %s ([%s])\r\n\tby %s (mailbench target) with %s;\r\n\t%s\r\n",
		sanitizeHeaderValue(helo), sanitizeHeaderValue(ip), by, proto, at.Format(time.RFC1123Z))
}

// sanitizeHeaderValue keeps a client-supplied token from breaking the
// header: anything outside printable ASCII, and parentheses, become '?'.
func sanitizeHeaderValue(v string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' || r == '(' || r == ')' {
			return '?'
		}
		return r
	}, v)
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

// Auth offers PLAIN against the target's users. It is never required.
func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		acc := s.t.byLogin[username]
		if acc == nil || (identity != "" && identity != username) ||
			subtle.ConstantTimeCompare([]byte(password), []byte(acc.Password)) != 1 {
			return smtp.ErrAuthFailed
		}
		return nil
	}), nil
}

// deliverLocal appends msg to acc's INBOX, applying the configured faults.
// It is safe for concurrent use.
func (t *Target) deliverLocal(acc *account, msg []byte) error {
	n := t.localSeq.Add(1)
	f := t.opts.Faults
	if d := t.delay.Load(); d > 0 {
		f.DeliveryDelay = time.Duration(d)
	}
	if f.DeliveryDelay > 0 && (f.DelayEvery <= 0 || every(f.DelayEvery, n)) {
		t.counters.delayed.Add(1)
		t.delayed.Add(1)
		go func() {
			defer t.delayed.Done()
			timer := time.NewTimer(f.DeliveryDelay)
			defer timer.Stop()
			select {
			case <-timer.C:
				_ = t.appendLocal(acc, msg, n)
			case <-t.closing:
			}
		}()
		return nil
	}
	return t.appendLocal(acc, msg, n)
}

// appendLocal is local delivery n of msg to acc's INBOX, now, with the
// drop, corrupt and duplicate faults applied.
func (t *Target) appendLocal(acc *account, msg []byte, n int64) error {
	f := t.opts.Faults
	if every(f.DropEvery, n) {
		t.counters.dropped.Add(1)
		return nil
	}
	if every(f.CorruptEvery, n) {
		if corrupted, ok := corruptBody(msg); ok {
			msg = corrupted
			t.counters.corrupted.Add(1)
		}
	}
	copies := 1
	if every(f.DuplicateEvery, n) {
		copies = 2
	}
	now := time.Now()
	for i := range copies {
		if _, err := acc.mem.Append("INBOX", bytes.NewReader(msg), &imap.AppendOptions{Time: now}); err != nil {
			return err
		}
		if i == 0 {
			t.counters.delivered.Add(1)
		} else {
			t.counters.duplicated.Add(1)
		}
	}
	return nil
}

// every reports whether a fault with period p applies to delivery n.
func every(p int, n int64) bool { return p > 0 && n%int64(p) == 0 }

// corruptBody returns a copy of msg with one byte of its body changed,
// keeping line structure intact: a letter changes case, a digit becomes the
// next digit; failing those, a byte other than CR, LF and '.' whose low bit
// can flip without making CR or LF has it flipped. The byte is the first
// suitable one from the middle of the body onwards (wrapping around). ok is
// false when the body has no suitable byte.
// It doesn't modify msg.
func corruptBody(msg []byte) (corrupted []byte, ok bool) {
	start := bytes.Index(msg, []byte("\r\n\r\n"))
	if start < 0 {
		return nil, false
	}
	start += 4
	body := msg[start:]
	if len(body) == 0 {
		return nil, false
	}
	pick := func(accept func(byte) bool) int {
		mid := len(body) / 2
		for k := range body {
			if j := (mid + k) % len(body); accept(body[j]) {
				return j
			}
		}
		return -1
	}
	isAlnum := func(b byte) bool {
		return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	j := pick(isAlnum)
	if j < 0 {
		j = pick(func(b byte) bool { return b != '\r' && b != '\n' && b != '.' && b^1 != '\r' && b^1 != '\n' })
	}
	if j < 0 {
		return nil, false
	}
	out := bytes.Clone(msg)
	b := &out[start+j]
	switch {
	case *b >= '0' && *b <= '9':
		*b = '0' + (*b-'0'+1)%10
	case isAlnum(*b):
		*b ^= 0x20
	default:
		*b ^= 1
	}
	return out, true
}
