package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// UnmarshalText parses a Go duration string ("30s", "1m30s", "250ms").
// A bare number is rejected: its unit would be a guess.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		f, _ := strconv.ParseFloat(s, 64)
		return fmt.Errorf("duration %s has no unit: write it as a string, e.g. \"%ss\"", s, strconv.FormatFloat(f, 'g', -1, 64))
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want e.g. \"30s\", \"1m30s\", \"250ms\"", s)
	}
	d.Duration = v
	return nil
}

// MarshalText renders the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// ByteSize units. Only binary units are accepted: "KB" is ambiguous
// (1000 or 1024) and is rejected with a hint.
const (
	KiB ByteSize = 1 << 10
	MiB ByteSize = 1 << 20
	GiB ByteSize = 1 << 30
)

// UnmarshalText parses a size: a number of bytes ("512", 512, "512B") or a
// whole number of KiB, MiB or GiB ("64KiB", "1 MiB"). Units are
// case-sensitive; KB, MB and GB are rejected as ambiguous.
func (s *ByteSize) UnmarshalText(b []byte) error {
	str := strings.TrimSpace(string(b))
	i := 0
	for i < len(str) && str[i] >= '0' && str[i] <= '9' {
		i++
	}
	num, unit := str[:i], strings.TrimSpace(str[i:])
	n, err := strconv.ParseInt(num, 10, 64)
	if num == "" || err != nil {
		return fmt.Errorf("invalid size %q: want a whole number of bytes or e.g. \"64KiB\", \"1MiB\"", str)
	}
	var mult ByteSize
	switch unit {
	case "", "B":
		mult = 1
	case "KiB":
		mult = KiB
	case "MiB":
		mult = MiB
	case "GiB":
		mult = GiB
	case "KB", "kB", "MB", "GB", "K", "k", "M", "G":
		return fmt.Errorf("invalid size %q: unit %s is ambiguous, write KiB, MiB or GiB (powers of 1024) or bytes", str, unit)
	default:
		return fmt.Errorf("invalid size %q: unknown unit %q (want B, KiB, MiB or GiB)", str, unit)
	}
	if n > int64(math.MaxInt64/mult) {
		return fmt.Errorf("invalid size %q: too large", str)
	}
	*s = ByteSize(n) * mult
	return nil
}

// MarshalText renders the size in the largest unit that divides it.
func (s ByteSize) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// String renders the size in the largest binary unit that divides it
// exactly ("64KiB", "1MiB", "1500B").
func (s ByteSize) String() string {
	switch {
	case s != 0 && s%GiB == 0:
		return strconv.FormatInt(int64(s/GiB), 10) + "GiB"
	case s != 0 && s%MiB == 0:
		return strconv.FormatInt(int64(s/MiB), 10) + "MiB"
	case s != 0 && s%KiB == 0:
		return strconv.FormatInt(int64(s/KiB), 10) + "KiB"
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}
