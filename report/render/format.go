package render

import (
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/report"
)

// The renderers' spelling of numbers is the model's (report.FormatCount
// and its siblings), so that a figure reads the same in the text, the
// HTML page, a campaign's table and the one-line texts of the model.

func fmtInt(n int64) string                   { return report.FormatCount(n) }
func fmtFloat(v float64, decimals int) string { return report.FormatFloat(v, decimals) }
func fmtFloat1(v float64) string              { return report.FormatFloat(v, 1) }
func fmtMS(d time.Duration) string            { return report.FormatMS(d) }
func trimFloat(f float64) string              { return strconv.FormatFloat(f, 'f', -1, 64) }
func joinReasons(why []string) string         { return strings.Join(why, "; ") }
func us(d time.Duration) int64                { return int64(d / time.Microsecond) }

func orDash(s string) string { return orValue(s, "-") }

func orValue(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
