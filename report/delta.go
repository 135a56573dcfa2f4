package report

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/compliance"
	"github.com/mailbench/mailbench/measure"
)

// The noise of a comparison of two runs: a difference is marked (*) as
// beyond the run-to-run noise when the two runs' 95% intervals do not
// overlap: the achieved rate's Poisson interval, a p95's bootstrap interval
// from the HDR histogram (bootstrapReplicates resamples of at most
// bootstrapSample operations, seeded: the same runs give the same marks),
// the error rate's Wilson interval.
const (
	bootstrapReplicates = 200
	bootstrapSample     = 2000
)

// rateInterval is the 95% interval of the rate whose window saw
// rate × window sessions (Poisson, normal approximation; exact enough for
// a mark).
func rateInterval(r *Run) (lo, hi float64) {
	h := r.Measurement.Hours()
	if h <= 0 {
		return r.AchievedSessionsPerHour, r.AchievedSessionsPerHour
	}
	n := r.AchievedSessionsPerHour * h
	d := 1.959964 * math.Sqrt(max(n, 1))
	return (n - d) / h, (n + d) / h
}

// p95Interval is the bootstrap 95% interval of the p95 of h.
func p95Interval(h *hdrhistogram.Histogram) (lo, hi time.Duration, ok bool) {
	if h == nil || h.TotalCount() < 20 {
		return 0, 0, false
	}
	n := int(min(h.TotalCount(), bootstrapSample))
	rng := rand.New(rand.NewPCG(uint64(h.TotalCount()), uint64(h.Max())))
	// The histogram as a cumulative distribution over its recorded bars,
	// sampled by binary search.
	var values, cum []int64
	var total int64
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			total += b.Count
			values, cum = append(values, b.To), append(cum, total)
		}
	}
	sample := make([]int64, n)
	p95s := make([]int64, bootstrapReplicates)
	for b := range p95s {
		for i := range sample {
			k := rng.Int64N(total)
			j, _ := slices.BinarySearch(cum, k+1)
			sample[i] = values[j]
		}
		slices.Sort(sample)
		p95s[b] = sample[int(math.Ceil(0.95*float64(n)))-1]
	}
	slices.Sort(p95s)
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return us(p95s[bootstrapReplicates*25/1000]), us(p95s[bootstrapReplicates*975/1000-1]), true
}

// disjoint reports whether [a0, a1] and [b0, b1] do not overlap.
func disjoint[T int64 | float64 | time.Duration](a0, a1, b0, b1 T) bool { return a1 < b0 || b1 < a0 }

// deltaText renders the change from base to v, "(+12.5%)", with " *" when
// marked beyond the noise.
func deltaText(base, v float64, marked bool) string {
	if base == 0 {
		return ""
	}
	s := " (" + signed(100*(v-base)/base, 1) + "%)"
	if marked {
		s += " *"
	}
	return s
}

func signed(f float64, prec int) string {
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if f >= 0 {
		s = "+" + s
	}
	return s
}

// RateDelta is the achieved rate's change against base, marked when the
// two Poisson intervals do not overlap.
func RateDelta(base, r *Run) string {
	if r == base {
		return ""
	}
	a0, a1 := rateInterval(base)
	b0, b1 := rateInterval(r)
	return deltaText(base.AchievedSessionsPerHour, r.AchievedSessionsPerHour, disjoint(a0, a1, b0, b1))
}

// P95Delta is a function's p95 change against base, marked when the two
// bootstrap intervals do not overlap.
func P95Delta(base, r *Run, f measure.Function) string {
	if r == base {
		return ""
	}
	br, ok1 := base.Table.Row(f)
	rr, ok2 := r.Table.Row(f)
	if !ok1 || !ok2 || br.Operations == 0 || rr.Operations == 0 {
		return ""
	}
	marked := false
	if bs, rs := base.Functions[f], r.Functions[f]; bs != nil && rs != nil {
		a0, a1, okA := p95Interval(bs.Histogram)
		b0, b1, okB := p95Interval(rs.Histogram)
		marked = okA && okB && disjoint(a0, a1, b0, b1)
	}
	return deltaText(float64(br.P95), float64(rr.P95), marked)
}

// ErrorDelta is the error rate's change against base in percentage points,
// marked when the two Wilson intervals do not overlap.
func ErrorDelta(base, r *Run) string {
	if r == base {
		return ""
	}
	be, re := base.Table.Errors, r.Table.Errors
	if be.Operations == 0 || re.Operations == 0 {
		return ""
	}
	a0, a1 := compliance.Wilson(be.Errors, be.Operations, compliance.DefaultZ)
	b0, b1 := compliance.Wilson(re.Errors, re.Operations, compliance.DefaultZ)
	s := " (" + signed(re.Percent-be.Percent, 2) + " pp)"
	if disjoint(a0, a1, b0, b1) {
		s += " *"
	}
	return s
}

// RegressionLimits are the changes against the first run that count as a
// regression (report --max-regression): a function's p95 up by more than
// P95Percent, the error rate up by more than ErrorPoints percentage points,
// the achieved rate down by more than RatePercent. A negative limit is not
// checked. Only changes beyond the run-to-run noise count.
type RegressionLimits struct {
	P95Percent, ErrorPoints, RatePercent float64
}

// ParseRegressionLimits reads "p95=10%,errors=0.1%,rate=2%" (any subset;
// errors in percentage points). It doesn't perform I/O.
func ParseRegressionLimits(s string) (RegressionLimits, error) {
	l := RegressionLimits{P95Percent: -1, ErrorPoints: -1, RatePercent: -1}
	if strings.TrimSpace(s) == "" {
		return l, errors.New("no limits: want e.g. p95=10%,errors=0.1%,rate=2%")
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		v = strings.TrimSuffix(strings.TrimSpace(v), "%")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || !(f >= 0) || math.IsInf(f, 0) || f > 1000 {
			return l, fmt.Errorf("%q: want NAME=PERCENT with a percentage from 0 to 1000 (names: p95, errors, rate)", part)
		}
		switch strings.TrimSpace(k) {
		case "p95":
			l.P95Percent = f
		case "errors":
			l.ErrorPoints = f
		case "rate":
			l.RatePercent = f
		default:
			return l, fmt.Errorf("%q: unknown figure %q (names: p95, errors, rate)", part, k)
		}
	}
	return l, nil
}

// Regressions lists every change of a later run against the first (runs[0])
// beyond lim and beyond the noise, naming the run by its label. It doesn't
// perform I/O.
func Regressions(runs []*Run, labels []string, lim RegressionLimits) []string {
	if len(runs) < 2 {
		return nil
	}
	base := runs[0]
	name := func(i int) string {
		if i < len(labels) && labels[i] != "" {
			return labels[i]
		}
		return orValue(runs[i].Name, fmt.Sprintf("run %d", i+1))
	}
	var out []string
	for i, r := range runs[1:] {
		i++
		if lim.RatePercent >= 0 && base.AchievedSessionsPerHour > 0 {
			drop := 100 * (base.AchievedSessionsPerHour - r.AchievedSessionsPerHour) / base.AchievedSessionsPerHour
			a0, a1 := rateInterval(base)
			b0, b1 := rateInterval(r)
			if drop > lim.RatePercent && disjoint(a0, a1, b0, b1) {
				out = append(out, fmt.Sprintf("%s: achieved sessions/hour %s against %s (%s%%, limit -%s%%)", name(i),
					FormatWhole(r.AchievedSessionsPerHour), FormatWhole(base.AchievedSessionsPerHour), signed(-drop, 1), trimFloat(lim.RatePercent)))
			}
		}
		if lim.ErrorPoints >= 0 {
			be, re := base.Table.Errors, r.Table.Errors
			if be.Operations > 0 && re.Operations > 0 && re.Percent-be.Percent > lim.ErrorPoints && strings.HasSuffix(ErrorDelta(base, r), "*") {
				out = append(out, fmt.Sprintf("%s: error rate %.2f%% against %.2f%% (+%.2f pp, limit +%s pp)", name(i), re.Percent, be.Percent, re.Percent-be.Percent, trimFloat(lim.ErrorPoints)))
			}
		}
		if lim.P95Percent >= 0 {
			for _, f := range TableFunctions(runs) {
				br, ok1 := base.Table.Row(f)
				rr, ok2 := r.Table.Row(f)
				if !ok1 || !ok2 || br.Operations == 0 || rr.Operations == 0 || br.P95 <= 0 {
					continue
				}
				up := 100 * float64(rr.P95-br.P95) / float64(br.P95)
				if up > lim.P95Percent && strings.HasSuffix(P95Delta(base, r, f), "*") {
					out = append(out, fmt.Sprintf("%s: %s p95 %s ms against %s ms (+%.1f%%, limit +%s%%)", name(i), f, fmtMS(rr.P95), fmtMS(br.P95), up, trimFloat(lim.P95Percent)))
				}
			}
		}
	}
	return out
}
