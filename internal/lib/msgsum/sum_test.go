package msgsum

import (
	"bytes"
	"strings"
	"testing"
)

// Known answers: the first 16 bytes of the published SHA-256 test vectors
// (FIPS 180-2 appendix B.1 for "abc"; the empty string).
func TestBodySumKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"empty", "", "sha256:e3b0c44298fc1c149afbf4c8996fb924"},
		{"abc", "abc", "sha256:ba7816bf8f01cfea414140de5dae2223"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BodySum([]byte(tt.body)); got != tt.want {
				t.Errorf("BodySum(%q) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

func TestBodySumDistinguishesLineEndings(t *testing.T) {
	crlf := BodySum([]byte("line one\r\nline two\r\n"))
	lf := BodySum([]byte("line one\nline two\n"))
	if crlf == lf {
		t.Fatalf("CRLF and LF bodies share checksum %s", crlf)
	}
}

func FuzzHasherMatchesBodySum(f *testing.F) {
	f.Add([]byte("Hello\r\n.\r\n"), uint8(3))
	f.Add([]byte{}, uint8(0))
	f.Add(bytes.Repeat([]byte("x"), 5000), uint8(64))
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8) {
		w, sum := NewBodyHasher()
		step := int(chunk) + 1
		for i := 0; i < len(body); i += step {
			end := min(i+step, len(body))
			if n, err := w.Write(body[i:end]); err != nil || n != end-i {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		want := BodySum(body)
		if got := sum(); got != want {
			t.Fatalf("streamed %q, whole %q", got, want)
		}
		if got := sum(); got != want {
			t.Fatalf("second call to sum changed result: %q", got)
		}
		if !Valid(want) {
			t.Fatalf("Valid(%q) = false", want)
		}
	})
}

func TestValid(t *testing.T) {
	good := BodySum([]byte("x"))
	tests := []struct {
		in   string
		want bool
	}{
		{good, true},
		{"", false},
		{Prefix, false},
		{strings.ToUpper(good), false},
		{"md5:" + good[len(Prefix):] + "aaa", false},
		{good[:Len-1] + "g", false},
		{good + "0", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.in); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
