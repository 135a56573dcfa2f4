package imapclient

import (
	"fmt"
	"io"
	"strings"

	"github.com/mailbench/mailbench/internal/goimap"
	"github.com/mailbench/mailbench/internal/goimap/internal"
)

// mailbench patch (fetch-into.patch): FetchCommand.NextInto.
//
// With ReadInCaller, Next still hands each message over as a
// FetchMessageData whose items go through a channel one by one, each boxed
// in an interface: a FETCH message of mailbench's session (UID, FLAGS,
// INTERNALDATE, RFC822.SIZE, ENVELOPE and a header section) cost eight
// allocations besides its envelope, and a channel send and receive per
// item. NextInto has the read loop decode the message straight into the
// caller's FetchMessageBuffer, reusing its slices from one message to the
// next.

// NextInto reads the next message of the command into buf and reports
// whether there was one; on error or at the end it returns false (Close
// then returns the error).
//
// buf is reset first, and its slices (Flags, BodySection, BinarySection,
// BinarySectionSize, and the Bytes of each section) are reused, up to a
// bound (64 of each, sections' memory twice maxBytes), as is the
// Envelope it points to when the message is decoded in place
// (envelope-into.patch): what a call leaves in buf is valid until the
// next call. The bytes kept of the
// message's body and binary sections are at most maxBytes in all: a
// section's bytes beyond that are read and dropped (its Bytes then hold
// its first bytes, or none). Otherwise buf holds what Next and
// FetchMessageData.Collect give, except that an empty FLAGS list may be
// an empty slice rather than nil.
//
// The message is decoded in place when the client reads in its caller
// (Options.ReadInCaller, and no Idle has handed reading to a goroutine),
// no UnilateralDataHandler takes FETCH data and this is the only FETCH
// command pending; otherwise NextInto takes the message from Next and
// copies it into buf. A message can be read with Next or NextInto,
// whichever the caller calls; Close reads the rest with Next.
func (cmd *FetchCommand) NextInto(buf *FetchMessageBuffer, maxBytes int) bool {
	if cmd.prev != nil {
		cmd.prev.discard()
		cmd.prev = nil
	}
	if cmd.intoErr != nil {
		return false
	}
	c := cmd.client
	if c == nil || !c.readInCaller() || c.options.unilateralDataHandler().Fetch != nil {
		return cmd.nextIntoCopy(buf, maxBytes)
	}
	cmd.into, cmd.intoMax, cmd.intoReady = buf, maxBytes, false
	var (
		msg      *FetchMessageData
		ok, sent bool
	)
	c.pumpUntil(func() bool {
		if cmd.intoReady {
			return true
		}
		select {
		case msg, ok = <-cmd.msgs:
			sent = true
		default:
		}
		return sent
	})
	cmd.into = nil
	if cmd.intoReady {
		cmd.intoReady = false
		return true
	}
	if !sent {
		// The read loop has ended: the channel is closed, or holds
		// what was sent before the end.
		msg, ok = <-cmd.msgs
	}
	if !ok || msg == nil {
		return false
	}
	return cmd.copyInto(buf, msg, maxBytes)
}

// nextIntoCopy is NextInto by way of Next.
func (cmd *FetchCommand) nextIntoCopy(buf *FetchMessageBuffer, maxBytes int) bool {
	msg := cmd.Next()
	if msg == nil {
		return false
	}
	return cmd.copyInto(buf, msg, maxBytes)
}

// copyInto reads msg's items into buf as FetchMessageData.Collect would,
// keeping at most maxBytes of its sections.
func (cmd *FetchCommand) copyInto(buf *FetchMessageBuffer, msg *FetchMessageData, maxBytes int) bool {
	fb := fetchIntoBuffer{buf: buf, budget: maxBytes}
	fb.reset(msg.SeqNum)
	for item := msg.Next(); item != nil; item = msg.Next() {
		var err error
		switch item := item.(type) {
		case FetchItemDataBodySection:
			var b []byte
			if item.Literal != nil {
				b, err = fb.readLiteral(fb.nextBodyBytes(), item.Literal)
			}
			buf.BodySection = append(buf.BodySection, FetchBodySectionBuffer{Section: item.Section, Bytes: b})
		case FetchItemDataBinarySection:
			var b []byte
			if item.Literal != nil {
				b, err = fb.readLiteral(fb.nextBinaryBytes(), item.Literal)
			}
			buf.BinarySection = append(buf.BinarySection, FetchBinarySectionBuffer{Section: item.Section, Bytes: b})
		case FetchItemDataFlags:
			buf.Flags = append(buf.Flags[:0], item.Flags...)
		default:
			err = buf.populateItemData(item)
		}
		if err != nil {
			// msg is not left for the next Next to discard (Next made
			// it cmd.prev): the literal that failed has let the read
			// loop go on (a reader goroutine is on the connection
			// again), and reading it again would race with it.
			if cmd.prev == msg {
				cmd.prev = nil
			}
			cmd.intoErr = err
			return false
		}
	}
	return true
}

// fetchIntoBuffer is a FetchMessageBuffer being filled, and how many more
// bytes of sections it may keep.
type fetchIntoBuffer struct {
	buf    *FetchMessageBuffer
	budget int
}

// reset empties buf for message seqNum, keeping its slices' memory up to
// a bound: what one message kept must not add to what the ones before
// kept (a server whose every message has one more section, the last one
// large, would grow the buffer message after message).
func (fb *fetchIntoBuffer) reset(seqNum uint32) {
	buf := fb.buf
	flags, body, binary, sizes := buf.Flags[:0], buf.BodySection[:0], buf.BinarySection[:0], buf.BinarySectionSize[:0]
	if cap(flags) > maxKeptItems {
		flags = nil
	}
	if cap(sizes) > maxKeptItems {
		sizes = nil
	}
	kept := 0
	if cap(body) <= maxKeptItems && cap(binary) <= maxKeptItems {
		for _, s := range body[:cap(body)] {
			kept += cap(s.Bytes)
		}
		for _, s := range binary[:cap(binary)] {
			kept += cap(s.Bytes)
		}
	}
	if cap(body) > maxKeptItems || cap(binary) > maxKeptItems || kept > 2*max(fb.budget, 4096) {
		body, binary = nil, nil
	}
	*buf = FetchMessageBuffer{
		SeqNum:            seqNum,
		Flags:             flags,
		BodySection:       body,
		BinarySection:     binary,
		BinarySectionSize: sizes,
	}
}

// maxKeptItems is the most flags, sections or section sizes whose memory
// a FetchMessageBuffer keeps from one message to the next.
const maxKeptItems = 64

// nextBodyBytes is the memory of the Bytes of the body section that comes
// next, from an earlier message: a slice of length 0, or nil.
func (fb *fetchIntoBuffer) nextBodyBytes() []byte {
	if s := fb.buf.BodySection; len(s) < cap(s) {
		return s[:len(s)+1][len(s)].Bytes[:0]
	}
	return nil
}

// nextBinaryBytes is nextBodyBytes for binary sections.
func (fb *fetchIntoBuffer) nextBinaryBytes() []byte {
	if s := fb.buf.BinarySection; len(s) < cap(s) {
		return s[:len(s)+1][len(s)].Bytes[:0]
	}
	return nil
}

// readLiteral reads a section's literal to its end, appends to dst the
// bytes the budget leaves room for and returns them: non-nil, as
// io.ReadAll's. A literal that ends before its announced size is an
// error (io.ReadAll took that end for the literal's).
func (fb *fetchIntoBuffer) readLiteral(dst []byte, lit io.Reader) ([]byte, error) {
	if dst == nil {
		dst = []byte{}
	}
	size := int64(-1)
	if s, ok := lit.(interface{ Size() int64 }); ok {
		size = s.Size()
	}
	var total int64
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := min(cap(dst)-len(dst), max(fb.budget, 0))
		var n int
		var err error
		if room == 0 {
			// Past the budget: read the rest, keep none of it.
			var m int64
			m, err = io.Copy(io.Discard, lit)
			total += m
			if err == nil {
				err = io.EOF
			}
		} else {
			n, err = lit.Read(dst[len(dst) : len(dst)+room])
			dst = dst[:len(dst)+n]
			fb.budget -= n
			total += int64(n)
		}
		if err == io.EOF {
			if size >= 0 && total < size {
				return dst, fmt.Errorf("literal cut short at %d of %d bytes: %w", total, size, io.ErrUnexpectedEOF)
			}
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// fetchIntoCmd returns the FETCH command whose caller waits in NextInto,
// when it is the only FETCH pending, or nil.
func (c *Client) fetchIntoCmd() *FetchCommand {
	if !c.readInCaller() {
		return nil
	}
	c.mutex.Lock()
	defer c.mutex.Unlock()
	var into *FetchCommand
	for _, anyCmd := range c.pendingCmds {
		if cmd, ok := anyCmd.(*FetchCommand); ok {
			if into != nil || cmd.into == nil {
				return nil
			}
			into = cmd
		}
	}
	return into
}

// handleFetchInto decodes the msg-att list of message seqNum into
// cmd.into, as handleFetch decodes it into items (the same grammar, the
// same helpers), and marks it ready when it belongs to cmd; one that does
// not (unilateral FETCH data, with no handler to take it) is dropped, as
// handleFetch drops it.
func (c *Client) handleFetchInto(seqNum uint32, cmd *FetchCommand) error {
	dec := c.dec
	fb := fetchIntoBuffer{buf: cmd.into, budget: cmd.intoMax}
	fb.reset(seqNum)
	buf := fb.buf

	var uid imap.UID
	err := dec.ExpectList(func() error {
		var attName string
		if !dec.Expect(dec.Func(&attName, isMsgAttNameChar), "msg-att name") {
			return dec.Err()
		}
		attName = strings.ToUpper(attName)

		switch attName {
		case "FLAGS":
			if !dec.ExpectSP() {
				return dec.Err()
			}
			flags, err := internal.AppendFlagList(dec, buf.Flags[:0])
			if err != nil {
				return err
			}
			buf.Flags = flags
		case "ENVELOPE":
			if !dec.ExpectSP() {
				return dec.Err()
			}
			// mailbench patch (envelope-into.patch): into the buffer's
			// own envelope, one allocation fewer per message.
			buf.envelope = imap.Envelope{}
			if err := readEnvelopeInto(dec, &c.options, &buf.envelope); err != nil {
				return fmt.Errorf("in envelope: %v", err)
			}
			buf.Envelope = &buf.envelope
		case "INTERNALDATE":
			if !dec.ExpectSP() {
				return dec.Err()
			}
			t, err := internal.ExpectDateTime(dec)
			if err != nil {
				return err
			}
			buf.InternalDate = t
		case "RFC822.SIZE":
			var size int64
			if !dec.ExpectSP() || !dec.ExpectNumber64(&size) {
				return dec.Err()
			}
			buf.RFC822Size = size
		case "UID":
			if !dec.ExpectSP() || !dec.ExpectUID(&uid) {
				return dec.Err()
			}
			buf.UID = uid
		case "BODY", "BINARY":
			if dec.Special('[') {
				bodySection, binarySection, err := c.readFetchSection(attName) // fetch-items.patch
				if err != nil {
					return err
				}

				var dst []byte
				if bodySection != nil {
					dst = fb.nextBodyBytes()
				} else {
					dst = fb.nextBinaryBytes()
				}
				// A literal the budget holds whole, up to
				// smallLiteralMax, is read by the decoder into dst;
				// any other one here, in the read loop, to its end.
				b, lit, ok := dec.ExpectNStringAppend(dst, int64(min(smallLiteralMax, max(fb.budget, 0))))
				if !ok {
					return dec.Err()
				}
				if b != nil {
					fb.budget -= len(b)
				} else if lit != nil {
					c.setReadTimeout(literalReadTimeout)
					var err error
					b, err = fb.readLiteral(dst, lit)
					c.setReadTimeout(respReadTimeout)
					if err != nil {
						return err
					}
				}
				if bodySection != nil {
					buf.BodySection = append(buf.BodySection, FetchBodySectionBuffer{Section: bodySection, Bytes: b})
				} else {
					buf.BinarySection = append(buf.BinarySection, FetchBinarySectionBuffer{Section: binarySection, Bytes: b})
				}
				break
			}
			if !dec.Expect(attName == "BODY", "'['") {
				return dec.Err()
			}
			fallthrough
		case "BODYSTRUCTURE":
			if !dec.ExpectSP() {
				return dec.Err()
			}
			bodyStruct, err := readBody(dec, &c.options)
			if err != nil {
				return err
			}
			buf.BodyStructure = bodyStruct
		case "BINARY.SIZE":
			size, err := readBinarySectionSize(dec) // fetch-items.patch
			if err != nil {
				return err
			}
			buf.BinarySectionSize = append(buf.BinarySectionSize, size)
		case "MODSEQ":
			modSeq, err := readModSeqItem(dec) // fetch-items.patch
			if err != nil {
				return err
			}
			buf.ModSeq = modSeq
		default:
			return fmt.Errorf("unsupported msg-att name: %q", attName)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.mutex.Lock()
	if _, ok := cmd.numSet.(imap.UIDSet); ok {
		cmd.intoReady = uid != 0 && cmd.recvUID(uid)
	} else {
		cmd.intoReady = seqNum != 0 && cmd.recvSeqNum(seqNum)
	}
	c.mutex.Unlock()
	if cmd.intoReady {
		// mailbench patch (read-batch.patch): the caller takes this
		// message out of cmd.into before the next is decoded into it.
		c.readOn = false
	}
	return nil
}
