package session

import (
	"hash/fnv"
	"time"

	"encoding/binary"

	"github.com/mailbench/mailbench/internal/run/schedule"
)

// ShardRunID is the run id of one shard of a sharded run (message ids are
// "r" + run id + "-" + sequence, see delivery.NewID): the run's id comes
// from its seed and common start instant, so every shard derives the same
// one without talking to the others, and shard i uses it XOR i. The shards'
// message ids therefore never collide (each shard numbers its messages
// from 1), and a shard's ledger ignores the other shards' mail it sees in
// its users' INBOXes.
func ShardRunID(seed int64, start time.Time, shard schedule.Shard) uint32 {
	h := fnv.New32a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(seed))
	binary.BigEndian.PutUint64(b[8:], uint64(start.UnixNano()))
	h.Write(b[:])
	base := h.Sum32() &^ (1<<12 - 1) // low 12 bits: the shard (MaxShards 4096)
	if base == 0 {
		base = 1 << 12
	}
	return base | uint32(shard.Index)
}
