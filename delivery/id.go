package delivery

// ParseID splits a message id made by message.NewID ("r" + 8 lowercase hex
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
