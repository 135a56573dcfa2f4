package delivery

import (
	"testing"
)

func TestParseID(t *testing.T) {
	tests := []struct {
		id  string
		run uint32
		seq uint64
		ok  bool
	}{
		{NewID(0x1a2b3c4d, 42), 0x1a2b3c4d, 42, true},
		{NewID(0, 1), 0, 1, true},
		{NewID(0xffffffff, 999999999999), 0xffffffff, 999999999999, true},
		{NewID(7, MaxSeq), 7, MaxSeq, true},     // 13 digits
		{"r00000007-000000000000", 0, 0, false}, // sequence 0
		{"init-user1-INBOX-3", 0, 0, false},
		{"R1a2b3c4d-000000000042", 0, 0, false},
		{"r1A2B3C4D-000000000042", 0, 0, false}, // NewID writes lowercase hex
		{"r1a2b3c4d-00000000042", 0, 0, false},  // 11 digits
		{"r1a2b3c4d_000000000042", 0, 0, false},
		{"r1a2b3c4d-0000000000x2", 0, 0, false},
		{"r1a2b3c4d-000000000042 ", 0, 0, false},
		{"r1a2b3c4d-99999999999999999999", 0, 0, false}, // overlong
		{"r1a2b3c4d-2000000000000", 0, 0, false},        // above MaxSeq
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		run, seq, ok := ParseID(tt.id)
		if ok != tt.ok || run != tt.run || seq != tt.seq {
			t.Errorf("ParseID(%q) = %#x, %d, %v; want %#x, %d, %v", tt.id, run, seq, ok, tt.run, tt.seq, tt.ok)
		}
	}
}

func FuzzParseID(f *testing.F) {
	f.Add(NewID(0xdeadbeef, 17))
	f.Add("init-user1-INBOX-1")
	f.Add("r00000000-000000000001")
	f.Fuzz(func(t *testing.T, id string) {
		run, seq, ok := ParseID(id)
		if !ok {
			if run != 0 || seq != 0 {
				t.Fatalf("ParseID(%q) not ok but returned %d, %d", id, run, seq)
			}
			return
		}
		if seq == 0 || seq > MaxSeq {
			t.Fatalf("ParseID(%q) accepted sequence %d", id, seq)
		}
		r2, s2, ok2 := ParseID(NewID(run, seq))
		if !ok2 || r2 != run || s2 != seq {
			t.Fatalf("NewID(%#x, %d) does not parse back: %#x, %d, %v", run, seq, r2, s2, ok2)
		}
	})
}

func TestNewID(t *testing.T) {
	tests := []struct {
		run  uint32
		seq  uint64
		want string
	}{
		{0x1a2b3c4d, 42, "r1a2b3c4d-000000000042"},
		{0, 0, "r00000000-000000000000"},
		{0xffffffff, 1234567890123456, "rffffffff-1234567890123456"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := NewID(tt.run, tt.seq)
		if got != tt.want {
			t.Errorf("NewID(%#x, %d) = %q, want %q", tt.run, tt.seq, got, tt.want)
		}
		seen[got] = true
	}
	for seq := range uint64(1000) {
		id := NewID(7, seq)
		if seen[id] {
			t.Fatalf("duplicate ID %s", id)
		}
		seen[id] = true
	}
}
