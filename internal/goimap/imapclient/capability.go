package imapclient

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal"
	"github.com/mailbench/mailbench/internal/goimap/internal/imapwire"
)

// Capability sends a CAPABILITY command.
func (c *Client) Capability() *CapabilityCommand {
	cmd := &CapabilityCommand{}
	c.beginCommand("CAPABILITY", cmd).end()
	return cmd
}

func (c *Client) handleCapability() error {
	caps, err := readCapabilities(c.dec)
	if err != nil {
		return err
	}
	c.setCaps(caps)
	if cmd := findPendingCmdByType[*CapabilityCommand](c); cmd != nil {
		cmd.caps = caps
	}
	return nil
}

// CapabilityCommand is a CAPABILITY command.
type CapabilityCommand struct {
	commandBase
	caps imap.CapSet
}

func (cmd *CapabilityCommand) Wait() (imap.CapSet, error) {
	err := cmd.wait()
	return cmd.caps, err
}

// capsSeen holds the last capability lists read whole from the buffer,
// with their bytes, for every client of the process: a load generator's
// sessions read the same two lists (the greeting's, LOGIN's) from the
// same server again and again. Entries are immutable; slots are replaced
// in turn. mailbench patch (caps-cache.patch).
var (
	capsSeen     [4]atomic.Pointer[capsEntry]
	capsSeenNext atomic.Uint32
)

type capsEntry struct {
	raw  []byte // from the SP before the first capability to the end byte
	end  byte   // the byte after raw: CR, LF or ']'
	caps imap.CapSet
}

// readCapabilities reads a capability list as beta.8's readCapabilities
// (readCapabilitiesParsed) does. When the input starts with the bytes of
// a list read before and the byte after them is the one that ended it,
// it reads those bytes and returns that list's set: the same bytes give
// the same set. Sets are thus shared between clients and read-only to
// everyone (the client replaces its set, it never changes one).
// mailbench patch (caps-cache.patch): Dovecot's 40 capabilities after
// LOGIN were 40 atoms, 40 map insertions and a map's growth per session.
func readCapabilities(dec *imapwire.Decoder) (imap.CapSet, error) {
	look := dec.Lookahead()
	for i := range capsSeen {
		e := capsSeen[i].Load()
		if e == nil || len(look) <= len(e.raw) || look[len(e.raw)] != e.end || !bytes.HasPrefix(look, e.raw) {
			continue
		}
		// Parsing reads the end byte too, and then fails on MaxSize
		// where AcceptBuffered alone would not.
		if dec.MaxSize > 0 && dec.Consumed()+int64(len(e.raw)) > dec.MaxSize {
			break
		}
		if dec.AcceptBuffered(e.raw) {
			return e.caps, nil
		}
	}
	end := bytes.IndexAny(look, "\r\n]")
	if end < 0 || end > 4096 {
		return readCapabilitiesParsed(dec)
	}
	e := &capsEntry{raw: bytes.Clone(look[:end]), end: look[end]} // a copy: parsing may refill the buffer
	start := dec.Consumed()
	caps, err := readCapabilitiesParsed(dec)
	if err == nil && dec.Consumed()-start == int64(len(e.raw)) {
		e.caps = caps
		capsSeen[(capsSeenNext.Add(1)-1)%uint32(len(capsSeen))].Store(e)
	}
	return caps, err
}

// readCapabilitiesParsed is beta.8's readCapabilities. mailbench patch
// (caps-cache.patch): renamed.
func readCapabilitiesParsed(dec *imapwire.Decoder) (imap.CapSet, error) {
	caps := make(imap.CapSet)
	for dec.SP() {
		// Some IMAP servers send multiple SP between caps:
		// https://github.com/emersion/go-imap/pull/652
		// mailbench patch (caps-loop.patch): spaces only. SP also
		// reports true, reading nothing, before a '(' (a list may
		// follow without SP), so "for dec.SP() {}" spun forever, with
		// no I/O for a deadline to stop, on a server's "IDLE (".
		for dec.Special(' ') {
		}

		cap, err := internal.ExpectCap(dec)
		if err != nil {
			return caps, fmt.Errorf("in capability-data: %w", err)
		}
		caps[cap] = struct{}{}
	}
	return caps, nil
}
