package imapwire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapnum"
	"github.com/mailbench/mailbench/internal/goimap/internal/utf7"
)

// This limits the max list nesting depth to prevent stack overflow.
const maxListDepth = 1000

// IsAtomChar returns true if ch is an ATOM-CHAR.
func IsAtomChar(ch byte) bool {
	switch ch {
	case '(', ')', '{', ' ', '%', '*', '"', '\\', ']':
		return false
	default:
		return !unicode.IsControl(rune(ch))
	}
}

// Is non-empty char
func isAStringChar(ch byte) bool {
	return IsAtomChar(ch) || ch == ']'
}

// DecoderExpectError is an error due to the Decoder.Expect family of methods.
type DecoderExpectError struct {
	Message string
}

func (err *DecoderExpectError) Error() string {
	return fmt.Sprintf("imapwire: %v", err.Message)
}

// A Decoder reads IMAP data.
//
// There are multiple families of methods:
//
//   - Methods directly named after IMAP grammar elements attempt to decode
//     said element, and return false if it's another element.
//   - "Expect" methods do the same, but set the decoder error (see Err) on
//     failure.
type Decoder struct {
	// CheckBufferedLiteralFunc is called when a literal is about to be decoded
	// and needs to be fully buffered in memory.
	CheckBufferedLiteralFunc func(size int64, nonSync bool) error
	// MaxSize defines a maximum number of bytes to be read from the input.
	// Literals are ignored.
	MaxSize int64

	r         *bufio.Reader
	side      ConnSide
	err       error
	literal   bool
	crlf      bool
	listDepth int
	readBytes int64

	// atoms holds recently read short atoms of a client's decoder, to
	// hand out again instead of a new string each time. mailbench patch
	// (atom-cache.patch).
	atoms *atomCache
}

// atomCache is a direct-mapped cache of short atoms. A server's responses
// repeat the same few (FETCH, UID, FLAGS, \Seen, the header field names
// a FETCH echoes for every message): one allocation per atom was a fifth
// of a client's. Bounded: atomCacheSlots strings of at most atomCacheMax
// bytes; a collision replaces the slot. mailbench patch (atom-cache.patch).
type atomCache [atomCacheSlots]string

const (
	atomCacheSlots = 128 // mailbench patch (atom-slots.patch): was 32
	atomCacheMax   = 32
)

// atomSlot is run's slot: its length, first, middle and last bytes,
// mixed by a multiplicative hash. mailbench patch (atom-slots.patch): the
// first hash, of length, first and last byte into 32 slots, made 114 of a
// Dovecot session's 529 lookups collide (FETCH's header field names,
// FLAGS, UID, INTERNALDATE, BODY all came back every message); this one
// into 128 slots makes 8 of them collide. Of the multipliers and shifts
// that give each name of a FETCH response, in both capitalisations
// servers echo, a slot of its own (TestPatchAtomSlots), these miss least
// in that session. mailbench patch (atom-seed.patch): the multiplier
// 16777619 (2^24 + 403) put runs that differ only in their last byte in
// one slot (tags T1..T9, $Label1..$Label5, sequence numbers); this one
// keeps those apart as well, and gives each atom of seedAtoms' hottest
// list a slot of its own.
func atomSlot(run []byte) uint {
	return uint((atomMix(run)*0x27d4eb2d)>>22) % atomCacheSlots
}

// atomMix is what atomSlot and knownFilterBit hash: run's length and its
// first, middle and last bytes. mailbench patch (atom-seed.patch).
func atomMix(run []byte) uint32 {
	x := uint32(len(run))
	x = x*31 + uint32(run[0])
	x = x*31 + uint32(run[len(run)/2])
	return x*31 + uint32(run[len(run)-1])
}

// intern returns run as a string, from the cache when it holds it.
func (c *atomCache) intern(run []byte) string {
	if len(run) > atomCacheMax {
		return string(run)
	}
	i := atomSlot(run)
	slot := &c[i]
	if *slot != string(run) { // no allocation: the compiler compares in place
		// mailbench patch (known-atoms.patch): a well-known atom costs
		// no allocation even the first time a client sees it.
		// mailbench patch (atom-seed.patch): the known atom of this
		// slot is compared in place, and the map is only asked when
		// another known atom hashes here: most first sightings (a
		// session's numbers, tags, dates, subjects) never hash a map
		// key.
		if seedAtoms[i] == string(run) {
			*slot = seedAtoms[i]
		} else if f := knownFilterBit(run); knownFilter[f/64]&(1<<(f%64)) == 0 {
			*slot = string(run)
		} else if known, ok := knownAtoms[string(run)]; ok {
			*slot = known
		} else {
			*slot = string(run)
		}
	}
	return *slot
}

// seedAtoms holds, for each slot of an atom cache, the known atom that
// has it (the last of knownAtomLists' to hash there). knownFilter is a
// filter of the other known atoms, by knownFilterBit: a run whose bit is
// clear is not one of them, and is not looked up in knownAtoms. Read-only
// after init. mailbench patch (atom-seed.patch).
var (
	seedAtoms   [atomCacheSlots]string
	knownFilter [knownFilterBits / 64]uint64
)

// knownFilterBits is knownFilter's size: with the known atoms that are no
// slot's seed, about one unknown run in 20 finds its bit set.
const knownFilterBits = 4096

// knownFilterBit is run's bit in knownFilter: the same bytes as atomSlot
// mixed by another multiplier, so that atoms sharing a slot rarely share
// a bit.
func knownFilterBit(run []byte) uint {
	return uint((atomMix(run)*2654435761)>>20) % knownFilterBits
}

func init() {
	var all [atomCacheSlots][]string
	for _, list := range knownAtomLists {
		for _, atom := range strings.Fields(list) {
			if len(atom) > atomCacheMax {
				continue
			}
			all[atomSlot([]byte(atom))] = append(all[atomSlot([]byte(atom))], atom)
		}
	}
	for i, atoms := range all {
		if len(atoms) == 0 {
			continue
		}
		seedAtoms[i] = knownAtoms[atoms[len(atoms)-1]]
		for _, atom := range atoms {
			if atom != seedAtoms[i] {
				f := knownFilterBit([]byte(atom))
				knownFilter[f/64] |= 1 << (f % 64)
			}
		}
	}
}

// knownAtoms holds the atoms and short strings that servers send in
// almost every session, each once or a few times: the capabilities of a
// LOGIN or CAPABILITY response (Dovecot sends 40), response codes, FETCH
// item names, flags, mailbox attributes and common header field names.
// A client's atom cache is new with each connection, so without this
// table each of them was an allocation per session. Read-only after
// init. mailbench patch (known-atoms.patch).
var knownAtoms = func() map[string]string {
	m := make(map[string]string)
	for _, list := range knownAtomLists {
		for _, atom := range strings.Fields(list) {
			m[atom] = atom
		}
	}
	return m
}()

// knownAtomLists are knownAtoms' lists. Where two known atoms share a
// cache slot, the later list's is the slot's seed (atom-seed.patch): the
// lists run from the atoms a session sees once (capabilities, which
// caps-cache.patch mostly spares the decoder) to the ones of every
// response.
var knownAtomLists = []string{
	// Capabilities (Dovecot 2.3, Cyrus 3, and RFCs' common ones).
	`IMAP4rev1 IMAP4rev2 IMAP4 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT SORT=DISPLAY
		THREAD=REFERENCES THREAD=REFS THREAD=ORDEREDSUBJECT MULTIAPPEND URL-PARTIAL CATENATE
		UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED I18NLEVEL=1 CONDSTORE QRESYNC ESEARCH
		ESORT SEARCHRES WITHIN CONTEXT=SEARCH CONTEXT=SORT LIST-STATUS BINARY MOVE SNIPPET=FUZZY
		PREVIEW=FUZZY PREVIEW STATUS=SIZE SAVEDATE LITERAL+ LITERAL- NOTIFY SPECIAL-USE STARTTLS
		AUTH=PLAIN AUTH=LOGIN AUTH=CRAM-MD5 AUTH=SCRAM-SHA-1 AUTH=SCRAM-SHA-256 AUTH=XOAUTH2
		AUTH=OAUTHBEARER AUTH=EXTERNAL LOGINDISABLED COMPRESS=DEFLATE QUOTA QUOTA=RES-STORAGE
		QUOTA=RES-MESSAGE ACL RIGHTS=kxten RIGHTS=texk METADATA METADATA-SERVER LIST-MYRIGHTS
		OBJECTID APPENDLIMIT UTF8=ACCEPT UTF8=ONLY CREATE-SPECIAL-USE MAILBOX-REFERRALS
		X-QUOTA=STORAGE X-QUOTA=MESSAGE XLIST ANNOTATEMORE ANNOTATE-EXPERIMENT-1 CONVERT
		DIGEST=SHA1 X-REPLICATION XMOVE JMAPACCESS PARTIAL INPROGRESS UIDONLY REPLACE`,
	// Response keywords and codes.
	`OK NO BAD BYE PREAUTH CAPABILITY LIST LSUB STATUS SEARCH FLAGS EXISTS RECENT EXPUNGE
		FETCH VANISHED ENABLED QUOTAROOT MYRIGHTS ALERT PARSE PERMANENTFLAGS READ-ONLY READ-WRITE
		TRYCREATE UIDNEXT UIDVALIDITY UNSEEN HIGHESTMODSEQ NOMODSEQ APPENDUID COPYUID UIDNOTSTICKY
		CLOSED MODIFIED AUTHENTICATIONFAILED AUTHORIZATIONFAILED UNAVAILABLE EXPIRED
		PRIVACYREQUIRED CONTACTADMIN NOPERM INUSE EXPUNGEISSUED CORRUPTION SERVERBUG CLIENTBUG
		CANNOT LIMIT OVERQUOTA ALREADYEXISTS NONEXISTENT MESSAGES DELETED SIZE MAILBOXID`,
	// FETCH items and section specifiers.
	`UID INTERNALDATE RFC822.SIZE RFC822 RFC822.HEADER RFC822.TEXT ENVELOPE BODY
		BODYSTRUCTURE BINARY.SIZE MODSEQ EMAILID THREADID HEADER TEXT MIME HEADER.FIELDS
		HEADER.FIELDS.NOT`,
	// Flags and mailbox attributes.
	`\Seen \Answered \Flagged \Deleted \Draft \Recent \* $Forwarded $MDNSent $Junk $NotJunk
		$Phishing $Important $Label1 $Label2 $Label3 $Label4 $Label5 \HasNoChildren \HasChildren
		\Noselect \NoInferiors \NonExistent \Subscribed \Remote \Marked \Unmarked \All \Archive
		\Drafts \Junk \Sent \Trash \Important INBOX NIL`,
	// Header field names a client asks for and the server echoes.
	`From To Cc Bcc Subject Date Message-Id Message-ID In-Reply-To References Reply-To Sender
		Content-Type Content-Transfer-Encoding MIME-Version List-Id Received`,
	// The names of system flags and mailbox attributes after their
	// backslash, which ExpectFlag reads as an atom of its own
	// (atom-seed.patch).
	`Seen Answered Flagged Deleted Draft Recent HasNoChildren HasChildren Noselect NoInferiors
		NonExistent Subscribed Remote Marked Unmarked All Archive Drafts Junk Sent Trash Important`,
	// Last, so that each is its slot's seed: the atoms of nearly
	// every session, most of them of every FETCH response.
	`OK NO BAD BYE CAPABILITY FLAGS EXISTS RECENT EXPUNGE FETCH LIST PERMANENTFLAGS UIDNEXT
		UIDVALIDITY HIGHESTMODSEQ APPENDUID READ-WRITE UID INTERNALDATE RFC822.SIZE ENVELOPE BODY
		HEADER.FIELDS NIL INBOX Seen`,
}

// LimitError is the decoder's error when the input exceeds MaxSize (What is
// "line": the bytes of a command or response outside its literals) or
// when CheckBufferedLiteralFunc refuses a literal. mailbench patch
// (bounds.patch): a peer that sends an endless line or announces a huge
// literal costs one error, not the process's memory.
type LimitError struct {
	What  string // "line" or "literal"
	Size  int64  // the literal's announced size; 0 for a line
	Limit int64
}

func (e *LimitError) Error() string {
	if e.What == "literal" {
		return fmt.Sprintf("imapwire: a literal of %d bytes exceeds the limit of %d bytes", e.Size, e.Limit)
	}
	return fmt.Sprintf("imapwire: a %s longer than %d bytes (outside literals)", e.What, e.Limit)
}

// ResetSize starts counting MaxSize again from zero: a client calls it at
// the start of each response, so that MaxSize bounds one response rather
// than the whole connection. mailbench patch (bounds.patch).
func (dec *Decoder) ResetSize() {
	dec.readBytes = 0
}

// NewDecoder creates a new decoder.
func NewDecoder(r *bufio.Reader, side ConnSide) *Decoder {
	return &Decoder{r: r, side: side}
}

func (dec *Decoder) mustUnreadByte() {
	if err := dec.r.UnreadByte(); err != nil {
		panic(fmt.Errorf("imapwire: failed to unread byte: %v", err))
	}
	dec.readBytes--
}

// Err returns the decoder error, if any.
func (dec *Decoder) Err() error {
	return dec.err
}

func (dec *Decoder) returnErr(err error) bool {
	if err == nil {
		return true
	}
	if dec.err == nil {
		dec.err = err
	}
	return false
}

func (dec *Decoder) readByte() (byte, bool) {
	if dec.MaxSize > 0 && dec.readBytes > dec.MaxSize {
		return 0, dec.returnErr(&LimitError{What: "line", Limit: dec.MaxSize})
	}
	dec.crlf = false
	if dec.literal {
		return 0, dec.returnErr(fmt.Errorf("imapwire: cannot decode while a literal is open"))
	}
	b, err := dec.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return b, dec.returnErr(err)
	}
	dec.readBytes++
	return b, true
}

// peekByte returns the next input byte without reading it, when it is
// buffered and readByte would read it (no open literal, MaxSize not
// exceeded), and then sets what readByte sets before reading (crlf);
// else ok is false and nothing changes. A byte that is not wanted thus
// costs no ReadByte and UnreadByte pair. mailbench patch (peek-byte.patch).
func (dec *Decoder) peekByte() (b byte, ok bool) {
	if dec.literal || dec.r.Buffered() == 0 || (dec.MaxSize > 0 && dec.readBytes > dec.MaxSize) {
		return 0, false
	}
	buf, _ := dec.r.Peek(1)
	dec.crlf = false
	return buf[0], true
}

// peekBytes2 returns the next two input bytes without reading them when
// both are buffered and readByte would read both; else nil. mailbench
// patch (peek-byte.patch).
func (dec *Decoder) peekBytes2() []byte {
	if dec.literal || dec.r.Buffered() < 2 || (dec.MaxSize > 0 && dec.readBytes+1 > dec.MaxSize) {
		return nil
	}
	buf, _ := dec.r.Peek(2)
	return buf
}

func (dec *Decoder) acceptByte(want byte) bool {
	// mailbench patch (peek-byte.patch): look at a buffered byte instead
	// of reading it and reading it back when it is not the one wanted.
	if b, ok := dec.peekByte(); ok {
		if b != want {
			return false
		}
		dec.r.ReadByte()
		dec.readBytes++
		return true
	}
	got, ok := dec.readByte()
	if !ok {
		return false
	} else if got != want {
		dec.mustUnreadByte()
		return false
	}
	return true
}

// EOF returns true if end-of-file is reached.
func (dec *Decoder) EOF() bool {
	_, err := dec.r.ReadByte()
	if err == io.EOF {
		return true
	} else if err != nil {
		return dec.returnErr(err)
	}
	dec.mustUnreadByte()
	return false
}

// Expect sets the decoder error if ok is false.
func (dec *Decoder) Expect(ok bool, name string) bool {
	if !ok {
		msg := fmt.Sprintf("expected %v", name)
		if dec.r.Buffered() > 0 {
			b, _ := dec.r.Peek(1)
			msg += fmt.Sprintf(", got %q", b)
		}
		return dec.returnErr(&DecoderExpectError{Message: msg})
	}
	return true
}

func (dec *Decoder) SP() bool {
	// mailbench patch (peek-byte.patch): the two bytes SP looks at, when
	// both are buffered, without reading and unreading them.
	if buf := dec.peekBytes2(); buf != nil {
		dec.crlf = false
		if buf[0] == ' ' {
			dec.r.ReadByte()
			dec.readBytes++
			return buf[1] != '\r' && buf[1] != '\n'
		}
		return buf[0] == '('
	}
	if dec.acceptByte(' ') {
		// https://github.com/emersion/go-imap/issues/571
		b, ok := dec.readByte()
		if !ok {
			return false
		}
		dec.mustUnreadByte()
		return b != '\r' && b != '\n'
	}

	// Special case: SP is optional if the next field is a parenthesized list
	b, ok := dec.readByte()
	if !ok {
		return false
	}
	dec.mustUnreadByte()
	return b == '('
}

func (dec *Decoder) ExpectSP() bool {
	return dec.Expect(dec.SP(), "SP")
}

func (dec *Decoder) CRLF() bool {
	dec.acceptByte(' ')  // https://github.com/emersion/go-imap/issues/540
	dec.acceptByte('\r') // be liberal in what we receive and accept lone LF
	if !dec.acceptByte('\n') {
		return false
	}
	dec.crlf = true
	return true
}

func (dec *Decoder) ExpectCRLF() bool {
	return dec.Expect(dec.CRLF(), "CRLF")
}

func (dec *Decoder) Func(ptr *string, valid func(ch byte) bool) bool {
	if run := dec.bufferedRun(valid); run != nil { // mailbench patch (runs.patch)
		if dec.side == ConnSideClient { // mailbench patch (atom-cache.patch)
			if dec.atoms == nil {
				dec.atoms = new(atomCache)
			}
			*ptr = dec.atoms.intern(run)
		} else {
			*ptr = string(run)
		}
		dec.consumeRun(len(run))
		return true
	}
	var sb strings.Builder
	for {
		b, ok := dec.readByte()
		if !ok {
			return false
		}

		if !valid(b) {
			dec.mustUnreadByte()
			break
		}

		sb.WriteByte(b)
	}
	if sb.Len() == 0 {
		return false
	}
	*ptr = sb.String()
	return true
}

func (dec *Decoder) Atom(ptr *string) bool {
	return dec.Func(ptr, IsAtomChar)
}

func (dec *Decoder) ExpectAtom(ptr *string) bool {
	return dec.Expect(dec.Atom(ptr), "atom")
}

func (dec *Decoder) ExpectNIL() bool {
	var s string
	return dec.ExpectAtom(&s) && dec.Expect(s == "NIL", "NIL")
}

func (dec *Decoder) Special(b byte) bool {
	return dec.acceptByte(b)
}

func (dec *Decoder) ExpectSpecial(b byte) bool {
	if dec.Special(b) {
		return true // the error text is only built on failure
	}
	return dec.Expect(false, fmt.Sprintf("'%v'", string(b)))
}

func (dec *Decoder) Text(ptr *string) bool {
	var sb strings.Builder
	run, ok := dec.readText(&sb) // mailbench patch (text-skip.patch)
	if run != nil {
		*ptr = string(run)
	} else if ok {
		*ptr = sb.String()
	}
	return ok
}

// readText reads a text as Text does, and reports what Text reports: the
// buffered run, returned without a copy (valid until the next read), or
// else its bytes one by one, appended to sb when sb is not nil.
// mailbench patch (text-skip.patch): Text's, shared with SkipText.
func (dec *Decoder) readText(sb *strings.Builder) (run []byte, ok bool) {
	if run := dec.bufferedRun(isTextChar); run != nil { // mailbench patch (runs.patch)
		dec.consumeRun(len(run))
		return run, true
	}
	n := 0
	for {
		b, ok := dec.readByte()
		if !ok {
			return nil, false
		} else if b == '\r' || b == '\n' {
			dec.mustUnreadByte()
			break
		}
		if sb != nil {
			sb.WriteByte(b)
		}
		n++
	}
	return nil, n > 0
}

func (dec *Decoder) ExpectText(ptr *string) bool {
	return dec.Expect(dec.Text(ptr), "text")
}

// SkipText reads what Text reads, without keeping it: it reports what Text
// would, and leaves the decoder as Text would. mailbench patch
// (text-skip.patch): a tagged or untagged OK's text, which nobody reads,
// was one string per response.
func (dec *Decoder) SkipText() bool {
	_, ok := dec.readText(nil)
	return ok
}

// ExpectSkipText is ExpectText without the text (SkipText). mailbench
// patch (text-skip.patch).
func (dec *Decoder) ExpectSkipText() bool {
	return dec.Expect(dec.SkipText(), "text")
}

func (dec *Decoder) DiscardUntilByte(untilCh byte) {
	for {
		ch, ok := dec.readByte()
		if !ok {
			return
		} else if ch == untilCh {
			dec.mustUnreadByte()
			return
		}
	}
}

func (dec *Decoder) DiscardLine() {
	if dec.crlf {
		return
	}
	var text string
	dec.Text(&text)
	dec.CRLF()
}

func (dec *Decoder) DiscardValue() bool {
	var s string
	if dec.String(&s) {
		return true
	}

	isList, err := dec.List(func() error {
		if !dec.DiscardValue() {
			return dec.Err()
		}
		return nil
	})
	if err != nil {
		return false
	} else if isList {
		return true
	}

	if dec.Atom(&s) {
		return true
	}

	dec.Expect(false, "value")
	return false
}

func (dec *Decoder) numberStr() (s string, ok bool) {
	if run := dec.bufferedRun(isDigit); run != nil { // mailbench patch (runs.patch)
		s = string(run)
		dec.consumeRun(len(run))
		return s, true
	}
	var sb strings.Builder
	for {
		ch, ok := dec.readByte()
		if !ok {
			return "", false
		} else if ch < '0' || ch > '9' {
			dec.mustUnreadByte()
			break
		}
		sb.WriteByte(ch)
	}
	if sb.Len() == 0 {
		return "", false
	}
	return sb.String(), true
}

// numberValue reads a number as numberStr does and returns its value
// when it fits in bits bits, as strconv.ParseUint(s, 10, bits) of
// numberStr's s would; a buffered run is parsed in place, with no string.
// mailbench patch (numbers.patch): numberStr's string was an allocation
// per UID, RFC822.SIZE and literal size, about 22 per session.
func (dec *Decoder) numberValue(bits uint) (uint64, bool) {
	run := dec.bufferedRun(isDigit)
	if run == nil {
		s, ok := dec.numberStr()
		if !ok {
			return 0, false
		}
		v, err := strconv.ParseUint(s, 10, int(bits))
		return v, err == nil // err: an overflow
	}
	limit := uint64(1)<<bits - 1
	var v uint64
	ok := true
	for _, c := range run {
		d := uint64(c - '0')
		if v > (limit-d)/10 {
			ok = false // an overflow; the digits are read all the same
			break
		}
		v = v*10 + d
	}
	dec.consumeRun(len(run))
	return v, ok
}

func (dec *Decoder) Number(ptr *uint32) bool {
	v, ok := dec.numberValue(32) // mailbench patch (numbers.patch)
	if !ok {
		return false
	}
	*ptr = uint32(v)
	return true
}

func (dec *Decoder) ExpectNumber(ptr *uint32) bool {
	return dec.Expect(dec.Number(ptr), "number")
}

func (dec *Decoder) ExpectBodyFldOctets(ptr *uint32) bool {
	// Workaround: some servers incorrectly return "-1" for the body structure
	// size. See:
	// https://github.com/emersion/go-imap/issues/534
	if dec.acceptByte('-') {
		*ptr = 0
		return dec.Expect(dec.acceptByte('1'), "-1 (body-fld-octets workaround)")
	}
	return dec.ExpectNumber(ptr)
}

func (dec *Decoder) Number64(ptr *int64) bool {
	// mailbench patch (numbers.patch): digits only, so ParseInt(s, 10,
	// 64) is ParseUint(s, 10, 63).
	v, ok := dec.numberValue(63)
	if !ok {
		return false
	}
	*ptr = int64(v)
	return true
}

func (dec *Decoder) ExpectNumber64(ptr *int64) bool {
	return dec.Expect(dec.Number64(ptr), "number64")
}

func (dec *Decoder) ModSeq(ptr *uint64) bool {
	v, ok := dec.numberValue(64) // mailbench patch (numbers.patch)
	if !ok {
		return false
	}
	*ptr = v
	return true
}

func (dec *Decoder) ExpectModSeq(ptr *uint64) bool {
	return dec.Expect(dec.ModSeq(ptr), "mod-sequence-value")
}

func (dec *Decoder) Quoted(ptr *string) bool {
	if !dec.Special('"') {
		return false
	}
	// mailbench patch (atom-cache.patch): a short quoted string that is
	// buffered whole, without escapes (a header field name a FETCH echoes
	// for every message) comes from the client's atom cache.
	if dec.side == ConnSideClient {
		if run := dec.bufferedRun(isQuotedRunChar); run != nil && len(run) <= atomCacheMax {
			if next, _ := dec.r.Peek(len(run) + 1); len(next) == len(run)+1 && next[len(run)] == '"' {
				if dec.atoms == nil {
					dec.atoms = new(atomCache)
				}
				*ptr = dec.atoms.intern(run)
				dec.consumeRun(len(run))
				dec.readByte() // the closing '"'
				return true
			}
		}
	}
	var sb strings.Builder
	for {
		// Copy the buffered run of bytes that are neither '"' nor '\\' at
		// once; readByte below handles the rest exactly as before.
		dec.quotedRun(&sb)
		ch, ok := dec.readByte()
		if !ok {
			return false
		}

		if ch == '"' {
			break
		}

		if ch == '\\' {
			ch, ok = dec.readByte()
			if !ok {
				return false
			}
		}

		sb.WriteByte(ch)
	}
	*ptr = sb.String()
	return true
}

// bufferedRun returns the non-empty run of bytes b with in(b) at the start
// of the buffered input when the byte that ends it is buffered too and
// reading the run and that byte one by one with readByte would neither
// exceed MaxSize nor meet an open literal; else nil, and the caller falls
// back to its byte-by-byte loop (which also handles an empty run, errors
// and reading more input). It reads nothing. mailbench patch (runs.patch):
// Func, Text and numberStr built every atom, text and number with one
// strings.Builder.WriteByte per byte.
func (dec *Decoder) bufferedRun(in func(ch byte) bool) []byte {
	if dec.literal {
		return nil
	}
	n := dec.r.Buffered()
	if dec.MaxSize > 0 {
		// The byte after the run is the last one read; readByte reads
		// while readBytes <= MaxSize.
		if left := dec.MaxSize - dec.readBytes + 1; left < int64(n) {
			n = int(left)
		}
	}
	if n <= 1 {
		return nil
	}
	buf, _ := dec.r.Peek(n)
	for i, b := range buf {
		if !in(b) {
			if i == 0 {
				return nil
			}
			return buf[:i]
		}
	}
	return nil
}

// consumeRun discards n bytes that bufferedRun returned, leaving the
// decoder as the byte-by-byte loops do after reading the run and unreading
// the byte after it. mailbench patch (runs.patch).
func (dec *Decoder) consumeRun(n int) {
	dec.r.Discard(n)
	dec.readBytes += int64(n)
	dec.crlf = false
}

// Lookahead returns the input bytes buffered now, for the caller to look
// at, not to keep (the next read may overwrite them); nil while a literal
// is open. It reads nothing. mailbench patch (section-cache.patch).
func (dec *Decoder) Lookahead() []byte {
	if dec.literal {
		return nil
	}
	b, _ := dec.r.Peek(dec.r.Buffered())
	return b
}

// Consumed returns how many bytes the decoder has read since it was made
// or ResetSize was last called (literals' bytes not counted). mailbench
// patch (section-cache.patch).
func (dec *Decoder) Consumed() int64 {
	return dec.readBytes
}

// AcceptBuffered reads prefix, and reports true, when the buffered input
// starts with it and reading it byte by byte would neither exceed MaxSize
// nor meet an open literal; else it reads nothing. The decoder is then
// as after reading those bytes one by one. mailbench patch
// (section-cache.patch).
func (dec *Decoder) AcceptBuffered(prefix []byte) bool {
	if dec.literal || len(prefix) == 0 || dec.r.Buffered() < len(prefix) {
		return false
	}
	if dec.MaxSize > 0 && int64(len(prefix)) > dec.MaxSize-dec.readBytes+1 {
		return false
	}
	if b, _ := dec.r.Peek(len(prefix)); !bytes.Equal(b, prefix) {
		return false
	}
	dec.consumeRun(len(prefix))
	return true
}

func isTextChar(ch byte) bool { return ch != '\r' && ch != '\n' }

func isDigit(ch byte) bool { return '0' <= ch && ch <= '9' }

const (
	nstringOther  = iota // neither below: the caller's original code decides
	nstringNIL           // the atom NIL, now consumed
	nstringQuoted        // a '"' comes next (nothing consumed)
)

// peekNString looks at the buffered input for the two common shapes of an
// nstring (and of NIL in place of a list): the atom "NIL" followed by a
// byte that cannot continue an atom, which it consumes exactly as Atom
// would (readBytes, crlf), and a quoted string, which it leaves for Quoted.
// Anything else, not fully buffered, too close to MaxSize or inside an open
// literal is nstringOther, and the caller runs its original code. With
// NIL this saves Atom's string; with a quoted string, the Atom attempt
// that reads '"' and unreads it. mailbench patch (nstring.patch).
func (dec *Decoder) peekNString() int {
	if dec.literal || (dec.MaxSize > 0 && dec.readBytes+4 > dec.MaxSize) {
		return nstringOther
	}
	buf, _ := dec.r.Peek(dec.r.Buffered())
	if len(buf) >= 1 && buf[0] == '"' {
		return nstringQuoted
	}
	if len(buf) >= 4 && buf[0] == 'N' && buf[1] == 'I' && buf[2] == 'L' && !IsAtomChar(buf[3]) {
		dec.consumeRun(3)
		return nstringNIL
	}
	return nstringOther
}

// AtomNumber reads an atom that is a number of at most nine digits (a
// message number that starts an untagged response) and returns it, when
// the atom is buffered whole with the byte after it; otherwise it reads
// nothing and reports false, and the caller reads the atom as before. It
// reads what Atom reads, without making a string of it. mailbench patch
// (response-number.patch).
func (dec *Decoder) AtomNumber() (uint32, bool) {
	run := dec.bufferedRun(IsAtomChar)
	if run == nil || len(run) > 9 {
		return 0, false
	}
	var n uint32
	for _, b := range run {
		if !isDigit(b) {
			return 0, false
		}
		n = n*10 + uint32(b-'0')
	}
	dec.consumeRun(len(run))
	return n, true
}

// SkipAddressList skips an address list (RFC 9051's env-from and the
// others) when it is buffered whole, with the byte after it, and in its
// usual form: "(", then addresses "(" nstring SP nstring SP nstring SP
// nstring ")" adjacent or one SP apart, then ")", where each nstring is
// NIL or a quoted string without escapes or line breaks. It reports
// whether it did; when it did not it has read nothing, and the caller
// reads the list the slow way, which takes every other form (NIL, "()",
// literals, escapes) and reports the errors. mailbench patch
// (address-skip.patch): an ENVELOPE's six lists were read one byte and
// one call at a time, and they are most of its bytes.
func (dec *Decoder) SkipAddressList() bool {
	if dec.literal || dec.listDepth+1 >= maxListDepth {
		return false
	}
	buf, _ := dec.r.Peek(dec.r.Buffered())
	if dec.MaxSize > 0 {
		// The list and the byte after it, with one to spare: as far as
		// readByte may read.
		left := dec.MaxSize - dec.readBytes - 1
		if left < 0 {
			return false
		}
		if left < int64(len(buf)) {
			buf = buf[:left]
		}
	}
	if len(buf) == 0 || buf[0] != '(' {
		return false
	}
	i, addrs := 1, 0
	for {
		if addrs > 0 && i < len(buf) && buf[i] == ')' {
			i++
			break
		}
		if addrs > 0 && i < len(buf) && buf[i] == ' ' {
			i++
		}
		if i >= len(buf) || buf[i] != '(' {
			return false
		}
		i++
		for field := range 4 {
			if field > 0 {
				if i >= len(buf) || buf[i] != ' ' {
					return false
				}
				i++
			}
			n := simpleNStringLen(buf[i:])
			if n == 0 {
				return false
			}
			i += n
		}
		if i >= len(buf) || buf[i] != ')' {
			return false
		}
		i++
		addrs++
	}
	if i >= len(buf) {
		return false // the byte after the list is not buffered
	}
	dec.consumeRun(i)
	return true
}

// simpleNStringLen is the length of the NIL or the quoted string without
// escapes or line breaks at the start of b, or 0. mailbench patch
// (address-skip.patch).
func simpleNStringLen(b []byte) int {
	if len(b) >= 4 && b[0] == 'N' && b[1] == 'I' && b[2] == 'L' && !IsAtomChar(b[3]) {
		return 3
	}
	if len(b) >= 2 && b[0] == '"' {
		for j := 1; j < len(b); j++ {
			switch b[j] {
			case '"':
				return j + 1
			case '\\', '\r', '\n':
				return 0
			}
		}
	}
	return 0
}

// quotedRun appends to sb the bytes already buffered up to the next '"' or
// '\\', as readByte would one by one: no further than MaxSize allows, and
// not at all while a literal is open.
func (dec *Decoder) quotedRun(sb *strings.Builder) {
	if dec.literal {
		return
	}
	n := dec.r.Buffered()
	if dec.MaxSize > 0 {
		// readByte reads a byte only while readBytes <= MaxSize.
		if left := dec.MaxSize - dec.readBytes + 1; left < int64(n) {
			n = int(left)
		}
	}
	if n <= 1 {
		return
	}
	buf, _ := dec.r.Peek(n)
	i := 0
	for i < len(buf) && buf[i] != '"' && buf[i] != '\\' {
		i++
	}
	if i == 0 {
		return
	}
	sb.Write(buf[:i])
	dec.r.Discard(i)
	dec.readBytes += int64(i)
	dec.crlf = false
}

func (dec *Decoder) ExpectAString(ptr *string) bool {
	if dec.Quoted(ptr) {
		return true
	}
	if dec.Literal(ptr) {
		return true
	}
	// We cannot do dec.Atom(ptr) here because sometimes mailbox names are unquoted,
	// and they can contain special characters like `]`.
	return dec.Expect(dec.Func(ptr, isAStringChar), "ASTRING-CHAR")
}

func (dec *Decoder) String(ptr *string) bool {
	return dec.Quoted(ptr) || dec.Literal(ptr)
}

func (dec *Decoder) ExpectString(ptr *string) bool {
	return dec.Expect(dec.String(ptr), "string")
}

func (dec *Decoder) ExpectNString(ptr *string) bool {
	switch dec.peekNString() { // mailbench patch (nstring.patch)
	case nstringNIL:
		*ptr = ""
		return true
	case nstringQuoted:
		return dec.ExpectString(ptr)
	}
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "nstring") {
			return false
		}
		*ptr = ""
		return true
	}
	return dec.ExpectString(ptr)
}

// DiscardNString reads an nstring as ExpectNString does and drops it: NIL
// and a buffered quoted string cost no allocation. mailbench patch
// (envelope-addresses.patch).
func (dec *Decoder) DiscardNString() bool {
	switch dec.peekNString() {
	case nstringNIL:
		return true
	case nstringQuoted:
		if !dec.Special('"') {
			break
		}
		for {
			if run := dec.bufferedRun(isQuotedRunChar); run != nil {
				dec.consumeRun(len(run))
			}
			ch, ok := dec.readByte()
			if !ok {
				return false
			}
			switch ch {
			case '"':
				return true
			case '\\':
				if _, ok := dec.readByte(); !ok {
					return false
				}
			}
		}
	}
	var s string
	return dec.ExpectNString(&s)
}

// isQuotedRunChar: the bytes of a quoted string that stand for themselves.
func isQuotedRunChar(ch byte) bool { return ch != '"' && ch != '\\' }

func (dec *Decoder) ExpectNStringReader() (lit *LiteralReader, nonSync, ok bool) {
	if dec.peekNString() == nstringNIL { // mailbench patch (nstring.patch)
		return nil, true, true
	}
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "nstring") {
			return nil, false, false
		}
		return nil, true, true
	}
	// TODO: read quoted string as a string instead of buffering
	if dec.Quoted(&s) {
		return newLiteralReaderFromString(s), true, true
	}
	if lit, nonSync, ok = dec.LiteralReader(); ok {
		return lit, nonSync, true
	} else {
		return nil, false, dec.Expect(false, "nstring")
	}
}

// ExpectNStringBytes reads an nstring as ExpectNStringReader does, except
// that a string or literal of at most max bytes is read whole and
// returned as b (non-nil, also when empty), with lit nil; a longer one is
// returned as lit, b nil; NIL is both nil. A failure to read a literal's
// bytes is the decoder's error, "in literal: " and the read's error.
// mailbench patch (literal-bytes.patch): a FETCH's small literal
// (small-literal.patch) was a LiteralReader and an io.LimitReader, read
// once into a buffer and dropped.
func (dec *Decoder) ExpectNStringBytes(max int64) (b []byte, lit *LiteralReader, ok bool) {
	return dec.ExpectNStringAppend(nil, max)
}

// ExpectNStringAppend is ExpectNStringBytes with the bytes appended to dst
// (dst nil: a new slice, as ExpectNStringBytes returns); b is non-nil
// when a string or literal was read, also when empty. mailbench patch
// (fetch-into.patch): FetchCommand.NextInto reads a message's sections
// into the buffers of the one before.
func (dec *Decoder) ExpectNStringAppend(dst []byte, max int64) (b []byte, lit *LiteralReader, ok bool) {
	if dec.peekNString() == nstringNIL {
		return nil, nil, true
	}
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "nstring") {
			return nil, nil, false
		}
		return nil, nil, true
	}
	if dec.Quoted(&s) {
		if int64(len(s)) > max {
			return nil, newLiteralReaderFromString(s), true
		}
		if dst == nil {
			dst = make([]byte, 0, len(s))
		}
		return append(dst, s...), nil, true
	}
	if !dec.Special('{') {
		return nil, nil, dec.Expect(false, "nstring")
	}
	var size int64
	if !dec.ExpectNumber64(&size) {
		return nil, nil, dec.Expect(false, "nstring")
	}
	if dec.side == ConnSideServer {
		dec.acceptByte('+')
	}
	if !dec.ExpectSpecial('}') || !dec.ExpectCRLF() {
		return nil, nil, dec.Expect(false, "nstring")
	}
	dec.literal = true
	if size > max {
		return nil, &LiteralReader{dec: dec, size: size, r: io.LimitReader(dec.r, size)}, true
	}
	// io.ReadFull, and the literal ends where LiteralReader.Read ends it:
	// at the input's EOF too.
	if dst == nil || int64(cap(dst)-len(dst)) < size {
		dst = append(make([]byte, 0, int64(len(dst))+size), dst...)
	}
	start := len(dst)
	b = dst[:start+int(size)]
	n := start
	var err error
	for n < len(b) && err == nil {
		var m int
		m, err = dec.r.Read(b[n:])
		n += m
	}
	if n == len(b) || err == io.EOF {
		dec.literal = false
	}
	if n < len(b) {
		if err == io.EOF && n > start {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, dec.returnErr(fmt.Errorf("in literal: %v", err))
	}
	return b, nil, true
}

func (dec *Decoder) List(f func() error) (isList bool, err error) {
	if !dec.Special('(') {
		return false, nil
	}
	if dec.Special(')') {
		return true, nil
	}

	dec.listDepth++
	defer func() {
		dec.listDepth--
	}()

	if dec.listDepth >= maxListDepth {
		return false, fmt.Errorf("imapwire: exceeded max depth")
	}

	for {
		if err := f(); err != nil {
			return true, err
		}

		if dec.Special(')') {
			return true, nil
		} else if !dec.ExpectSP() {
			return true, dec.Err()
		}
	}
}

func (dec *Decoder) ExpectList(f func() error) error {
	isList, err := dec.List(f)
	if err != nil {
		return err
	} else if !dec.Expect(isList, "(") {
		return dec.Err()
	}
	return nil
}

func (dec *Decoder) ExpectNList(f func() error) error {
	if dec.peekNString() == nstringNIL { // mailbench patch (nstring.patch)
		return nil
	}
	var s string
	if dec.Atom(&s) {
		if !dec.Expect(s == "NIL", "NIL") {
			return dec.Err()
		}
		return nil
	}
	return dec.ExpectList(f)
}

func (dec *Decoder) ExpectMailbox(ptr *string) bool {
	var name string
	if !dec.ExpectAString(&name) {
		return false
	}
	if strings.EqualFold(name, "INBOX") {
		*ptr = "INBOX"
		return true
	}
	name, err := utf7.Decode(name)
	if err == nil {
		*ptr = name
	}
	return dec.returnErr(err)
}

func (dec *Decoder) ExpectUID(ptr *imap.UID) bool {
	var num uint32
	if !dec.ExpectNumber(&num) {
		return false
	}
	*ptr = imap.UID(num)
	return true
}

func (dec *Decoder) ExpectNumSet(kind NumKind, ptr *imap.NumSet) bool {
	if dec.Special('$') {
		*ptr = imap.SearchRes()
		return true
	}

	var s string
	if !dec.Expect(dec.Func(&s, isNumSetChar), "sequence-set") {
		return false
	}
	numSet, err := imapnum.ParseSet(s)
	if err != nil {
		return dec.returnErr(err)
	}

	switch kind {
	case NumKindSeq:
		*ptr = seqSetFromNumSet(numSet)
	case NumKindUID:
		*ptr = uidSetFromNumSet(numSet)
	}
	return true
}

func (dec *Decoder) ExpectUIDSet(ptr *imap.UIDSet) bool {
	var numSet imap.NumSet
	ok := dec.ExpectNumSet(NumKindUID, &numSet)
	if ok {
		*ptr = numSet.(imap.UIDSet)
	}
	return ok
}

func isNumSetChar(ch byte) bool {
	return ch == '*' || IsAtomChar(ch)
}

func (dec *Decoder) Literal(ptr *string) bool {
	lit, nonSync, ok := dec.LiteralReader()
	if !ok {
		return false
	}
	if dec.CheckBufferedLiteralFunc != nil {
		if err := dec.CheckBufferedLiteralFunc(lit.Size(), nonSync); err != nil {
			// mailbench patch (bounds.patch): the refusal is the decoder's
			// error; beta.8 returned false with no error, and the caller
			// went on to parse the literal's bytes as protocol.
			lit.cancel()
			return dec.returnErr(err)
		}
	}
	var sb strings.Builder
	_, err := io.Copy(&sb, lit)
	if err == nil {
		*ptr = sb.String()
	}
	return dec.returnErr(err)
}

func (dec *Decoder) LiteralReader() (lit *LiteralReader, nonSync, ok bool) {
	if !dec.Special('{') {
		return nil, false, false
	}
	var size int64
	if !dec.ExpectNumber64(&size) {
		return nil, false, false
	}
	if dec.side == ConnSideServer {
		nonSync = dec.acceptByte('+')
	}
	if !dec.ExpectSpecial('}') || !dec.ExpectCRLF() {
		return nil, false, false
	}
	dec.literal = true
	lit = &LiteralReader{
		dec:  dec,
		size: size,
		r:    io.LimitReader(dec.r, size),
	}
	return lit, nonSync, true
}

func (dec *Decoder) ExpectLiteralReader() (lit *LiteralReader, nonSync bool, err error) {
	lit, nonSync, ok := dec.LiteralReader()
	if !dec.Expect(ok, "literal") {
		return nil, false, dec.Err()
	}
	return lit, nonSync, nil
}

type LiteralReader struct {
	dec  *Decoder
	size int64
	r    io.Reader
}

func newLiteralReaderFromString(s string) *LiteralReader {
	return &LiteralReader{
		size: int64(len(s)),
		r:    strings.NewReader(s),
	}
}

func (lit *LiteralReader) Size() int64 {
	return lit.size
}

func (lit *LiteralReader) Read(b []byte) (int, error) {
	n, err := lit.r.Read(b)
	if err == io.EOF {
		lit.cancel()
	}
	return n, err
}

func (lit *LiteralReader) cancel() {
	if lit.dec == nil {
		return
	}
	lit.dec.literal = false
	lit.dec = nil
}
