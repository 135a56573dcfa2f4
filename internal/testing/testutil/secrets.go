package testutil

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mailbench/mailbench/measure"
)

// ChainLinks returns err and every error reachable from it through
// Unwrap() error and Unwrap() []error, depth first.
func ChainLinks(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, ChainLinks(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, ChainLinks(e)...)
		}
	}
	return out
}

// CheckNoSecret fails t if the text of any link of err's chain, or of the
// observations, holds pw or a SASL PLAIN encoding of it (both clients'
// tests of redaction use it).
func CheckNoSecret(t *testing.T, err error, obs []measure.Observation, user, pw string) {
	t.Helper()
	secrets := []string{
		pw,
		base64.StdEncoding.EncodeToString([]byte(pw)),
		base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pw)),
	}
	var texts []string
	for _, e := range ChainLinks(err) {
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e))
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		texts = append(texts, e.Error())
	}
	for _, o := range obs {
		texts = append(texts, fmt.Sprintf("%+v", o))
		for _, e := range ChainLinks(o.Err) {
			texts = append(texts, e.Error())
		}
	}
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %q in an error link: %q", s, text)
			}
		}
	}
}
