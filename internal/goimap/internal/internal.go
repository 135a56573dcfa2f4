package internal

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

const (
	DateTimeLayout = "_2-Jan-2006 15:04:05 -0700"
	DateLayout     = "2-Jan-2006"
)

const FlagRecent imap.Flag = "\\Recent" // removed in IMAP4rev2

func DecodeDateTime(dec *imapwire.Decoder) (time.Time, error) {
	var s string
	if !dec.Quoted(&s) {
		return time.Time{}, nil
	}
	// mailbench patch (date-time.patch): the usual form without
	// time.Parse's general layout walk.
	if t, ok := parseDateTime(s); ok {
		return t, nil
	}
	t, err := time.Parse(DateTimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("in date-time: %v", err) // TODO: use imapwire.DecodeExpectError?
	}
	return t, err
}

const (
	shortMonths = "JanFebMarAprMayJunJulAugSepOctNovDec"
	monthDays   = "303232332323" // days past 28, January to December, February in a common year
)

// parseDateTime is time.Parse(DateTimeLayout, s) for a date-time in its
// usual form: "dd-Mon-yyyy hh:mm:ss +zzzz" (a space for the first digit
// of a day below 10), the month as the layout writes it, every field in
// range, one space between the parts. It reports false for anything else
// (other capitalisations of the month, more spaces, a one-digit hour,
// out-of-range values), which time.Parse then parses or refuses as
// before. Each INTERNALDATE of a FETCH went through time.Parse's walk of
// the layout, about a sixth of a FETCH response's decoding; this is the
// same result (the same instant, and the same Location: time.Local when
// its offset then is the date's, else the FixedZone time.Parse makes).
// It doesn't perform I/O. mailbench patch (date-time.patch).
func parseDateTime(s string) (time.Time, bool) {
	if len(s) != len(DateTimeLayout) || s[2] != '-' || s[6] != '-' || s[11] != ' ' || s[14] != ':' || s[17] != ':' || s[20] != ' ' {
		return time.Time{}, false
	}
	digits := func(b string) (int, bool) {
		n := 0
		for i := 0; i < len(b); i++ {
			if b[i] < '0' || b[i] > '9' {
				return 0, false
			}
			n = n*10 + int(b[i]-'0')
		}
		return n, true
	}
	day, ok1 := digits(s[1:2])
	if s[0] != ' ' {
		day, ok1 = digits(s[0:2])
	}
	month := time.Month(strings.Index(shortMonths, s[3:6])/3 + 1)
	if s[3:6] != shortMonths[3*(month-1):3*month] {
		month = 0
	}
	year, ok2 := digits(s[7:11])
	hour, ok3 := digits(s[12:14])
	min, ok4 := digits(s[15:17])
	sec, ok5 := digits(s[18:20])
	zh, ok6 := digits(s[22:24])
	zm, ok7 := digits(s[24:26])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || month == 0 ||
		hour > 23 || min > 59 || sec > 59 || zh > 23 || zm > 59 || (s[21] != '+' && s[21] != '-') {
		return time.Time{}, false
	}
	days := int(monthDays[month-1] - '0')
	if month == time.February && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		days++
	}
	if day < 1 || day > days+28 {
		return time.Time{}, false
	}
	offset := (zh*60 + zm) * 60
	if s[21] == '-' {
		offset = -offset
	}
	t := time.Date(year, month, day, hour, min, sec, 0, time.UTC).Add(-time.Duration(offset) * time.Second)
	// As time.Parse: the local zone if it was in effect with this
	// offset at that instant, else a fixed zone (time.FixedZone keeps
	// one per whole hour, as time.Parse finds).
	if _, local := t.In(time.Local).Zone(); local == offset {
		return t.In(time.Local), true
	}
	return t.In(time.FixedZone("", offset)), true
}

func ExpectDateTime(dec *imapwire.Decoder) (time.Time, error) {
	t, err := DecodeDateTime(dec)
	if err != nil {
		return t, err
	}
	if !dec.Expect(!t.IsZero(), "date-time") {
		return t, dec.Err()
	}
	return t, nil
}

func ExpectDate(dec *imapwire.Decoder) (time.Time, error) {
	var s string
	if !dec.ExpectAString(&s) {
		return time.Time{}, dec.Err()
	}
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("in date: %v", err) // use imapwire.DecodeExpectError?
	}
	return t, nil
}

func ExpectFlagList(dec *imapwire.Decoder) ([]imap.Flag, error) {
	return AppendFlagList(dec, nil)
}

// AppendFlagList is ExpectFlagList with the flags appended to flags.
// mailbench patch (fetch-into.patch): FetchCommand.NextInto reads a
// message's flags into the slice of the one before.
func AppendFlagList(dec *imapwire.Decoder, flags []imap.Flag) ([]imap.Flag, error) {
	err := dec.ExpectList(func() error {
		// Some servers start the list with a space, so we need to skip it
		// https://github.com/emersion/go-imap/pull/633
		dec.SP()

		flag, err := ExpectFlag(dec)
		if err != nil {
			return err
		}
		flags = append(flags, flag)
		return nil
	})
	return flags, err
}

func ExpectCap(dec *imapwire.Decoder) (imap.Cap, error) {
	var name string
	if !dec.ExpectAtom(&name) {
		return "", dec.Err()
	}
	return canonicalCap(name), nil
}

func ExpectFlag(dec *imapwire.Decoder) (imap.Flag, error) {
	isSystem := dec.Special('\\')
	if isSystem && dec.Special('*') {
		return imap.FlagWildcard, nil // flag-perm
	}
	var name string
	if !dec.ExpectAtom(&name) {
		return "", fmt.Errorf("in flag: %w", dec.Err())
	}
	if isSystem {
		// mailbench patch (flags.patch): a system flag is looked up
		// without building "\\"+name first.
		if flag, ok := lookupFolded(canonFlags(), '\\', name); ok {
			return flag, nil
		}
		name = "\\" + name
	}
	return canonicalFlag(name), nil
}

func canonFlags() map[string]imap.Flag {
	canonOnce.Do(canonInit)
	return canonFlag
}

// lookupFolded looks prefix+s up in m, keyed by lower-case strings, as
// m[strings.ToLower(string(prefix)+s)] does, without allocating when
// prefix+s is short ASCII (prefix 0: none). mailbench patch (flags.patch):
// strings.ToLower allocated for every flag and mailbox attribute with an
// upper-case letter, that is nearly all of them.
func lookupFolded[T any](m map[string]T, prefix byte, s string) (T, bool) {
	slow := func() (T, bool) {
		full := s
		if prefix != 0 {
			full = string([]byte{prefix}) + s
		}
		v, ok := m[strings.ToLower(full)]
		return v, ok
	}
	var buf [64]byte
	b := buf[:0]
	if prefix != 0 {
		b = append(b, prefix)
	}
	if len(b)+len(s) > len(buf) {
		return slow()
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 { // strings.ToLower's Unicode rules
			return slow()
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	v, ok := m[string(b)] // no allocation: the compiler looks up in place
	return v, ok
}

func ExpectMailboxAttrList(dec *imapwire.Decoder) ([]imap.MailboxAttr, error) {
	var attrs []imap.MailboxAttr
	err := dec.ExpectList(func() error {
		attr, err := ExpectMailboxAttr(dec)
		if err != nil {
			return err
		}
		attrs = append(attrs, attr)
		return nil
	})
	return attrs, err
}

func ExpectMailboxAttr(dec *imapwire.Decoder) (imap.MailboxAttr, error) {
	flag, err := ExpectFlag(dec)
	return canonicalMailboxAttr(string(flag)), err
}

var (
	canonOnce        sync.Once
	canonFlag        map[string]imap.Flag
	canonMailboxAttr map[string]imap.MailboxAttr
)

func canonInit() {
	flags := []imap.Flag{
		imap.FlagSeen,
		imap.FlagAnswered,
		imap.FlagFlagged,
		imap.FlagDeleted,
		imap.FlagDraft,
		imap.FlagForwarded,
		imap.FlagMDNSent,
		imap.FlagJunk,
		imap.FlagNotJunk,
		imap.FlagPhishing,
		imap.FlagImportant,
	}
	mailboxAttrs := []imap.MailboxAttr{
		imap.MailboxAttrNonExistent,
		imap.MailboxAttrNoInferiors,
		imap.MailboxAttrNoSelect,
		imap.MailboxAttrHasChildren,
		imap.MailboxAttrHasNoChildren,
		imap.MailboxAttrMarked,
		imap.MailboxAttrUnmarked,
		imap.MailboxAttrSubscribed,
		imap.MailboxAttrRemote,
		imap.MailboxAttrAll,
		imap.MailboxAttrArchive,
		imap.MailboxAttrDrafts,
		imap.MailboxAttrFlagged,
		imap.MailboxAttrJunk,
		imap.MailboxAttrSent,
		imap.MailboxAttrTrash,
		imap.MailboxAttrImportant,
	}

	canonFlag = make(map[string]imap.Flag)
	for _, flag := range flags {
		canonFlag[strings.ToLower(string(flag))] = flag
	}

	canonMailboxAttr = make(map[string]imap.MailboxAttr)
	for _, attr := range mailboxAttrs {
		canonMailboxAttr[strings.ToLower(string(attr))] = attr
	}
}

func canonicalFlag(s string) imap.Flag {
	canonOnce.Do(canonInit)
	if flag, ok := lookupFolded(canonFlag, 0, s); ok { // mailbench patch (flags.patch)
		return flag
	}
	return imap.Flag(s)
}

func canonicalMailboxAttr(s string) imap.MailboxAttr {
	canonOnce.Do(canonInit)
	if attr, ok := lookupFolded(canonMailboxAttr, 0, s); ok { // mailbench patch (flags.patch)
		return attr
	}
	return imap.MailboxAttr(s)
}

func canonicalCap(s string) imap.Cap {
	// mailbench patch (caps.patch): a name in upper-case ASCII is already
	// canonical unless it is one of the two below (servers send nearly all
	// capabilities this way, about 50 per LOGIN reply).
	if isUpperASCII(s) && s != "IMAP4REV1" && s != "IMAP4REV2" {
		return imap.Cap(s)
	}
	// Only two caps are not fully uppercase
	for _, cap := range []imap.Cap{imap.CapIMAP4rev1, imap.CapIMAP4rev2} {
		if strings.EqualFold(s, string(cap)) {
			return cap
		}
	}
	return imap.Cap(strings.ToUpper(s))
}

// isUpperASCII reports whether s is ASCII without lower-case letters, so
// that strings.ToUpper(s) == s. mailbench patch (caps.patch).
func isUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}
