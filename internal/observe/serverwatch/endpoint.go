package serverwatch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mailbench/mailbench/workload"
)

// maxScrapeBytes bounds what one scrape reads: node_exporter's page is
// about 100 KiB, Dovecot's a few; a page that goes on is cut, not held.
const maxScrapeBytes = 8 << 20

// endpoint is a [[server.metrics]] source: a Prometheus (text 0.0.4) or
// OpenMetrics page. Each named metric is the sum of its series; a counter
// (its TYPE, or a name ending in _total) is recorded as a rate per second,
// and a counter that went down was reset: its new value is the increase.
type endpoint struct {
	cfg    workload.ServerMetricsSource
	client *http.Client

	prevAt time.Time
	prev   map[string]float64
}

func newEndpoint(cfg workload.ServerMetricsSource, c *http.Client) *endpoint {
	return &endpoint{cfg: cfg, client: c}
}

func (e *endpoint) name() string { return e.cfg.Name }
func (e *endpoint) kind() string { return "metrics" }

func (e *endpoint) sample(ctx context.Context, now time.Time) ([]value, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", e.cfg.URL, resp.Status)
	}
	sums, counters, err := parseExposition(io.LimitReader(resp.Body, maxScrapeBytes), e.cfg.Metrics)
	if err != nil {
		return nil, err
	}
	var out []value
	var missing []string
	cur := map[string]float64{}
	for _, m := range e.cfg.Metrics {
		v, ok := sums[m]
		if !ok {
			missing = append(missing, m)
			continue
		}
		if !counters[m] {
			out = append(out, value{e.cfg.Name + "." + m, "", v})
			continue
		}
		cur[m] = v
		if p, ok := e.prev[m]; ok && !e.prevAt.IsZero() {
			if secs := now.Sub(e.prevAt).Seconds(); secs > 0 {
				inc := v - p
				if inc < 0 {
					inc = v // reset: the server restarted or the counter was cleared
				}
				out = append(out, value{e.cfg.Name + "." + m + "_per_s", "/s", inc / secs})
			}
		}
	}
	e.prev, e.prevAt = cur, now
	if len(missing) > 0 {
		return out, fmt.Errorf("not on the page: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// parseExposition sums, for each wanted metric, the values of its samples
// (name, or name_total for an OpenMetrics counter), and says which are
// counters. It reads the text formats line by line: comments other than
// TYPE, timestamps and exemplars are skipped; a malformed sample line is
// an error naming it.
func parseExposition(r io.Reader, wanted []string) (sums map[string]float64, counters map[string]bool, err error) {
	want := map[string]bool{}
	for _, w := range wanted {
		want[w] = true
	}
	sums, counters = map[string]float64{}, map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			f := strings.Fields(line)
			if len(f) >= 4 && f[1] == "TYPE" && f[3] == "counter" {
				counters[f[2]] = true
			}
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		base := name
		if !want[base] {
			base = strings.TrimSuffix(name, "_total")
			if base == name || !want[base] {
				continue
			}
			counters[base] = true
		}
		if strings.HasPrefix(rest, "{") {
			end := labelsEnd(rest)
			if end < 0 {
				return nil, nil, fmt.Errorf("line %d: unterminated labels", n)
			}
			rest = rest[end+1:]
		}
		if i := strings.Index(rest, " # "); i >= 0 {
			rest = rest[:i] // an OpenMetrics exemplar
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, nil, fmt.Errorf("line %d: %s has no value", n, name)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %s: %w", n, name, err)
		}
		sums[base] += v
	}
	return sums, counters, sc.Err()
}

// labelsEnd is the index of the "}" that closes the label set s starts
// with, past quoted values (which may hold braces and escaped quotes); -1
// when it is not closed.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i
		}
	}
	return -1
}
