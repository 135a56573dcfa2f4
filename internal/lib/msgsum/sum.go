// Package msgsum computes the body checksum that mailbench stamps into every
// generated message as the X-Mailbench-Sum header and that the SMTP sink and
// the IMAP checks recompute on arrival.
//
// The checksum is "sha256:" followed by the lowercase hex encoding of the
// first 16 bytes of SHA-256 over the message body exactly as transmitted after
// the header/body separator: CRLF line endings, dot-unstuffed (the bytes an
// SMTP server hands to its backend after the blank line that ends the header).
//
// The package doesn't perform I/O.
package msgsum

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
)

// Header is the name of the header field that carries the checksum.
const Header = "X-Mailbench-Sum"

// Prefix starts every checksum string.
const Prefix = "sha256:"

// sumBytes is how many leading bytes of the SHA-256 digest are kept.
const sumBytes = 16

// Len is the length of a checksum string: the prefix and 32 hex digits.
const Len = len(Prefix) + 2*sumBytes

// BodySum returns the checksum of body, which must be the message body
// without the header and without the separating blank line.
func BodySum(body []byte) string {
	d := sha256.Sum256(body)
	return format(d[:])
}

// NewBodyHasher returns a writer that hashes everything written to it and a
// function that returns the checksum of the bytes written so far. Writes
// never fail. The pair is not safe for concurrent use; sum may be called
// more than once and between writes.
func NewBodyHasher() (w io.Writer, sum func() string) {
	h := sha256.New()
	return h, func() string { return sumOf(h) }
}

func sumOf(h hash.Hash) string { return format(h.Sum(nil)) }

func format(digest []byte) string {
	buf := make([]byte, Len)
	copy(buf, Prefix)
	hex.Encode(buf[len(Prefix):], digest[:sumBytes])
	return string(buf)
}

// Valid reports whether s has the shape of a checksum produced by BodySum.
func Valid(s string) bool {
	if len(s) != Len || s[:len(Prefix)] != Prefix {
		return false
	}
	for _, c := range s[len(Prefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
