package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
)

// SchemaVersion is the version of the JSON report written by WriteJSON.
const SchemaVersion = 1

// MaxJSONSize bounds what ReadJSON reads.
const MaxJSONSize = 64 << 20

// Duration is a length of time as a report keeps it: a time.Duration that
// JSON holds as whole microseconds (the schema's fields ending in _us).
type Duration time.Duration

func (d Duration) String() string   { return time.Duration(d).String() }
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }
func (d Duration) Hours() float64   { return time.Duration(d).Hours() }

// MarshalJSON writes d as an integer of microseconds, truncated.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, us(time.Duration(d)), 10), nil
}

// UnmarshalJSON reads an integer of microseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("a duration in microseconds: %w", err)
	}
	*d = Duration(fromUS(v))
	return nil
}

// Histogram is a histogram of mailbench's geometry (µs; metrics.NewHistogram)
// that JSON holds in the HdrHistogram V2 compressed base64 encoding; the
// zero Histogram has none.
type Histogram struct{ *hdrhistogram.Histogram }

// MarshalJSON writes the encoded histogram as a string; the zero
// Histogram as null.
func (h Histogram) MarshalJSON() ([]byte, error) {
	if h.Histogram == nil {
		return []byte("null"), nil
	}
	enc, err := metrics.EncodeHistogram(h.Histogram)
	if err != nil {
		return nil, err
	}
	return json.Marshal(enc)
}

// UnmarshalJSON decodes a histogram of mailbench's geometry only; null is
// the zero Histogram.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		h.Histogram = nil
		return nil
	}
	var enc string
	if err := json.Unmarshal(b, &enc); err != nil {
		return err
	}
	d, err := metrics.DecodeHistogram(enc)
	if err != nil {
		return err
	}
	h.Histogram = d
	return nil
}

// Functions are a run's exact counts and histograms by function. JSON
// holds them as a list in the SPEC table's order, then by name.
type Functions map[measure.Function]*metrics.FunctionStats

// MarshalJSON writes the functions in table order.
func (fs Functions) MarshalJSON() ([]byte, error) {
	names := make([]measure.Function, 0, len(fs))
	for f, s := range fs {
		if s != nil {
			names = append(names, f)
		}
	}
	slices.SortFunc(names, FunctionOrder)
	list := make([]*metrics.FunctionStats, len(names))
	for i, f := range names {
		list[i] = fs[f]
	}
	return json.Marshal(list)
}

// UnmarshalJSON reads the list back, refusing a function twice and
// inconsistent stats (metrics.FunctionStats.Check); an empty list reads as
// nil.
func (fs *Functions) UnmarshalJSON(b []byte) error {
	var list []*metrics.FunctionStats
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*fs = nil
	for _, s := range list {
		if s == nil {
			return errors.New("a function is null")
		}
		if _, dup := (*fs)[s.Function]; dup {
			return fmt.Errorf("function %q appears twice", s.Function)
		}
		if err := s.Check(); err != nil {
			return err
		}
		if *fs == nil {
			*fs = make(Functions, len(list))
		}
		(*fs)[s.Function] = s
	}
	return nil
}

func us(d time.Duration) int64     { return int64(d / time.Microsecond) }
func fromUS(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

func fmtJSONTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseJSONTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// FunctionOrder sorts functions as the SPEC table does, then by name.
func FunctionOrder(a, b measure.Function) int {
	ia, ib := slices.Index(measure.AllFunctions, a), slices.Index(measure.AllFunctions, b)
	switch {
	case ia >= 0 && ib >= 0:
		return ia - ib
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return strings.Compare(string(a), string(b))
}

// document is the JSON report: a Run under its schema version.
type document struct {
	SchemaVersion int `json:"schema_version"`
	*Run
}

// derived is a shallow copy of r as WriteJSON writes it: the derived
// figures filled in, times in UTC, and empty collections written as such
// rather than null. r itself is not modified.
func derived(r *Run) *Run {
	c := *r
	c.Started, c.Ended = c.Started.UTC(), c.Ended.UTC()
	c.Expected, c.ExpectedLow, c.ExpectedHigh = r.ExpectedSessions()
	c.AchievedBandLow, c.AchievedBandHigh = r.AchievedBand()
	_, c.UsersFigured = r.UsersFigure()
	c.PerUser = r.SessionsPerUser()
	c.DroppedBy = r.DropsBy()
	c.MeanConcurrency = r.ObservedConcurrency()
	if r.Generator != nil {
		g := *r.Generator
		g.Reasons = r.GeneratorBound()
		c.Generator = &g
	}
	c.SessionsByType = orEmptyMap(c.SessionsByType)
	c.Warnings = orEmpty(c.Warnings)
	c.Table.Failing = orEmpty(c.Table.Failing)
	if c.Functions == nil {
		c.Functions = Functions{}
	}
	return &c
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orEmptyMap(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// WriteJSON writes r as one indented JSON document of schema version
// SchemaVersion (docs/report-schema.md): the Run as its field tags say,
// with its derived figures computed. Durations are truncated to whole
// microseconds. Histograms are written in the HdrHistogram V2 compressed
// base64 encoding. The output is deterministic for a given r, and r is
// not modified.
func WriteJSON(w io.Writer, r *Run) error {
	b, err := json.MarshalIndent(document{SchemaVersion: SchemaVersion, Run: derived(r)}, "", "  ")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// ReadJSON reads a report written by WriteJSON. It is meant for files from
// other machines: it reads at most MaxJSONSize bytes, rejects unknown fields,
// other schema versions, trailing data, duplicated functions and
// inconsistent function stats (metrics.FunctionStats.Check), and decodes
// every histogram (of mailbench's geometry only), so the result can be
// merged exactly. The compliance table and the derived figures are read as
// stored; Merge re-evaluates the table, and Run's methods compute the
// figures again. Empty collections are read back as nil.
func ReadJSON(rd io.Reader) (*Run, error) {
	data, err := io.ReadAll(io.LimitReader(rd, MaxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if len(data) > MaxJSONSize {
		return nil, fmt.Errorf("read report: larger than %d bytes", MaxJSONSize)
	}
	var head struct {
		SchemaVersion  int `json:"schema_version"`
		Started, Ended any
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("read report: not a JSON document: %w", err)
	}
	if head.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("read report: schema_version %d, want %d", head.SchemaVersion, SchemaVersion)
	}
	// The times are named in their errors, which encoding/json does not do.
	for _, t := range []struct {
		name  string
		value any
	}{{"started", head.Started}, {"ended", head.Ended}} {
		if s, ok := t.value.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return nil, fmt.Errorf("read report: %s: %w", t.name, err)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	doc := document{Run: &Run{}}
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return nil, errors.New("read report: trailing data after the report")
	}
	r := doc.Run
	if len(r.SessionsByType) == 0 {
		r.SessionsByType = nil
	}
	if len(r.Warnings) == 0 {
		r.Warnings = nil
	}
	if len(r.Table.Failing) == 0 {
		r.Table.Failing = nil
	}
	if len(r.Table.NotMeasured) == 0 {
		r.Table.NotMeasured = nil
	}
	return r, nil
}

// ReadStrictJSON decodes one JSON document of at most MaxJSONSize bytes
// from rd into v; unknown fields are errors. what names the document in
// errors ("read what: ..."). The summaries that embed run reports
// (certify, size) read themselves through it. It performs I/O only on rd.
func ReadStrictJSON(rd io.Reader, what string, v any) error {
	data, err := io.ReadAll(io.LimitReader(rd, MaxJSONSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	if len(data) > MaxJSONSize {
		return fmt.Errorf("read %s: larger than %d bytes", what, MaxJSONSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// EmbeddedJSON is r's JSON report (WriteJSON, without the trailing line
// break) to embed in a larger document (sweep, certify, size), or null for
// a nil r.
func EmbeddedJSON(r *Run) (json.RawMessage, error) {
	if r == nil {
		return json.RawMessage("null"), nil
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// WriteIndentedJSON writes v as indented JSON: the one layout of the
// documents that embed runs (sweep, certify, size).
func WriteIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// CheckSchema returns an error naming what was read unless its schema and
// version are the wanted ones. It doesn't perform I/O.
func CheckSchema(what, schema string, version int, wantSchema string, wantVersion int) error {
	if schema != wantSchema || version != wantVersion {
		return fmt.Errorf("read %s: schema %q version %d, want %q version %d", what, schema, version, wantSchema, wantVersion)
	}
	return nil
}
