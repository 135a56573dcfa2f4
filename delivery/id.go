package delivery

import "strconv"

// The message id is the one name of a message across the run: the
// X-Mailbench-Id header the generator writes (and the local part of its
// Message-Id), what the sink, the IMAP reads and the ledger match by. Its
// format is written here (NewID) and read here (ParseID), nowhere else.

// ParseID splits a message id made by NewID ("r" + 8 lowercase hex
// digits of the run id + "-" + at least 12 decimal digits of the sequence
// number) into its parts. ok is false for anything else: population ids
// ("init-…"), foreign mail, malformed or overlong input, sequence 0 or a
// sequence number above MaxSeq. It doesn't allocate.
func ParseID(id string) (runID uint32, seq uint64, ok bool) {
	const minLen = 1 + 8 + 1 + 12
	if len(id) < minLen || len(id) > minLen+8 || id[0] != 'r' || id[9] != '-' {
		return 0, 0, false
	}
	for i := 1; i < 9; i++ {
		c := id[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		default:
			return 0, 0, false
		}
		runID = runID<<4 | uint32(v)
	}
	for i := 10; i < len(id); i++ {
		c := id[i]
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		seq = seq*10 + uint64(c-'0')
	}
	if seq == 0 || seq > MaxSeq {
		return 0, 0, false
	}
	return runID, seq, true
}

// MaxSeq is the largest message sequence number the ledger accounts for.
const MaxSeq = 1<<40 - 1

// NewID returns the message id that is unique within a run: the run ID in
// hex and the sequence number in decimal, e.g. "r1a2b3c4-000000000042".
// It is safe as the local part of a Message-Id.
func NewID(runID uint32, seq uint64) string {
	var b [32]byte
	buf := append(b[:0], 'r')
	const hexd = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		buf = append(buf, hexd[(runID>>uint(shift))&0xf])
	}
	buf = append(buf, '-')
	s := strconv.AppendUint(nil, seq, 10)
	for i := len(s); i < 12; i++ {
		buf = append(buf, '0')
	}
	buf = append(buf, s...)
	return string(buf)
}
