package smtp

import (
	"bytes"
	"errors"
	"io"
)

var ErrTooLongLine = errors.New("smtp: too long a line in input stream")

// lineLimitReader reads from the underlying Reader but restricts
// line length of lines in input stream to a certain length.
//
// If line length exceeds the limit - Read returns ErrTooLongLine
type lineLimitReader struct {
	R         io.Reader
	LineLimit int

	curLineLength int
}

func (r *lineLimitReader) Read(b []byte) (int, error) {
	if r.curLineLength > r.LineLimit && r.LineLimit > 0 {
		return 0, ErrTooLongLine
	}

	n, err := r.R.Read(b)
	if err != nil {
		return n, err
	}

	if r.LineLimit == 0 {
		return n, nil
	}

	// Count line by line with bytes.IndexByte: the length only grows within
	// a line, so checking it at the end of each line's part is the same as
	// checking it after every byte. A '\n' counts as the first byte of the
	// line it starts.
	for p := b[:n]; len(p) > 0; {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			i = len(p)
		}
		r.curLineLength += i
		if r.curLineLength > r.LineLimit {
			return 0, ErrTooLongLine
		}
		if i == len(p) {
			break
		}
		r.curLineLength = 1
		if r.curLineLength > r.LineLimit {
			return 0, ErrTooLongLine
		}
		p = p[i+1:]
	}

	return n, nil
}
