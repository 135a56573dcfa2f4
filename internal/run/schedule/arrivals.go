// Package schedule is the open model: when sessions start. An
// ArrivalSchedule gives the i-th arrival's offset from the run's start
// (Poisson, from the seed), never from completions; a Scheduler hands
// arrivals out on time and counts those it could not start (late,
// dropped). It knows nothing of IMAP or SMTP.
package schedule

import (
	"math"
	"math/rand/v2"
	"time"
)

// ArrivalSchedule yields the intended start offsets of an open-model
// (Poisson) arrival process: gaps between starts are exponential with mean
// 1/rate, drawn from a generator seeded by the run's seed. Offsets are
// measured from the run's start, so a late consumer never shifts later
// arrivals: the i-th start is fixed before the run begins.
//
// An ArrivalSchedule doesn't perform I/O and is not safe for concurrent use.
type ArrivalSchedule struct {
	meanGap float64 // seconds
	rng     *rand.Rand
	next    float64 // seconds from the run's start
	n       int64
	shard   Shard // see Partition
}

// NewArrivalSchedule returns the schedule of perHour arrivals per hour,
// reproducible from seed. stream separates independent schedules drawn from
// the same seed (sessions, inbound mail).
func NewArrivalSchedule(perHour float64, seed int64, stream uint64) *ArrivalSchedule {
	s := &ArrivalSchedule{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed0000+stream))}
	if perHour > 0 {
		s.meanGap = 3600 / perHour
	} else {
		s.meanGap = math.Inf(1)
	}
	return s
}

// Next returns the index and the intended start offset of the next arrival.
// Offsets never decrease. A partitioned schedule skips other shards' arrivals.
func (s *ArrivalSchedule) Next() (int64, time.Duration) {
	for {
		if i, off := s.next1(); s.shard.Owns(i) || off == time.Duration(math.MaxInt64) {
			return i, off
		}
	}
}

func (s *ArrivalSchedule) next1() (int64, time.Duration) {
	s.next += s.rng.ExpFloat64() * s.meanGap
	i := s.n
	s.n++
	if math.IsInf(s.next, 1) || s.next > float64(math.MaxInt64/int64(time.Second)) {
		return i, time.Duration(math.MaxInt64)
	}
	return i, time.Duration(s.next * float64(time.Second))
}
