package sweep

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"github.com/mailbench/mailbench/report"
)

// DeriveSeed is the seed of the i-th run of a multi-run command derived
// from the workload's seed: the first 8 bytes (big-endian) of
// SHA-256("mailbench/seed" 0x00 seed i), seed and i as 8-byte big-endian
// integers; 0 is mapped to 1 (0 means "no seed of its own"). Distinct i give
// distinct, unrelated arrival schedules; the same (seed, i) always gives the
// same one. certify and size set it as workload.Config.ScheduleSeed, so the
// users and the mailbox population (from Seed) are the same in every run.
// It doesn't perform I/O.
func DeriveSeed(seed int64, i int) int64 {
	var b [len("mailbench/seed") + 1 + 16]byte
	n := copy(b[:], "mailbench/seed")
	n++ // the 0x00 separator
	binary.BigEndian.PutUint64(b[n:], uint64(seed))
	binary.BigEndian.PutUint64(b[n+8:], uint64(int64(i)))
	sum := sha256.Sum256(b[:])
	s := int64(binary.BigEndian.Uint64(sum[:8]))
	if s == 0 {
		s = 1
	}
	return s
}

// GeneratorBound reports whether the generator, not the server, limited a
// run (the run then says nothing about the server's capacity), and why.
// certify and size take one as an option; the default is
// DefaultGeneratorBound.
type GeneratorBound func(*report.Run) (bound bool, why string)

// DefaultGeneratorBound is the one definition of GENERATOR-BOUND,
// report.Run.GeneratorBound, as a GeneratorBound.
func DefaultGeneratorBound() GeneratorBound {
	return func(r *report.Run) (bool, string) {
		if r == nil {
			return false, ""
		}
		if why := r.GeneratorBound(); len(why) > 0 {
			return true, "GENERATOR-BOUND: " + strings.Join(why, "; ")
		}
		return false, ""
	}
}
