package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func orDash(s string) string { return orValue(s, "-") }

func orValue(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// fmtMS renders d in milliseconds with two decimals.
func fmtMS(d time.Duration) string {
	return fmtFloat(float64(d)/float64(time.Millisecond), 2)
}

func fmtFloat1(v float64) string { return fmtFloat(v, 1) }

// fmtFloat renders v with the given decimals and thousands separators.
func fmtFloat(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	out := groupThousands(intPart)
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// fmtInt renders n with thousands separators, as SPEC does ("12,019").
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + groupThousands(s[1:])
	}
	return groupThousands(s)
}

func groupThousands(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head > 0 {
		b.WriteString(digits[:head])
	}
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// FormatCount renders n with thousands separators, as SPEC does ("12,019").
func FormatCount(n int64) string { return fmtInt(n) }

// FormatFloat renders v with the given decimals and thousands separators
// ("12,019.5").
func FormatFloat(v float64, decimals int) string { return fmtFloat(v, decimals) }

// FormatMS renders d in milliseconds with two decimals ("12.50").
func FormatMS(d time.Duration) string { return fmtMS(d) }

// FloorPercent renders a percentage with two decimals, rounded down (a %
// compliant never shows better than it is).
func FloorPercent(p float64) string { return fmt.Sprintf("%.2f", max(0, math.Floor(p*100+1e-9)/100)) }

// CeilPercent renders a percentage with two decimals, rounded up (an error
// rate never shows better than it is).
func CeilPercent(p float64) string { return fmt.Sprintf("%.2f", max(0, math.Ceil(p*100-1e-9)/100)) }
