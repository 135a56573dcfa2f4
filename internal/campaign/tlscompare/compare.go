// Package tlscompare runs one workload at one load several times, once per
// way of reaching the server — plaintext, TLS, TLS with session resumption —
// and puts the results side by side: sessions/hour achieved, connect time
// and its breakdown, resumed handshakes, compliance, and the generator's CPU
// time per session. It is `mailbench compare-tls`.
//
// The runs themselves are carried out by a campaign.RunFunc (orchestrator.Run in the CLI);
// tlscompare only derives the configurations, measures CPU around each run and
// builds the table.
package tlscompare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/metrics"
	"github.com/mailbench/mailbench/report"
	"github.com/mailbench/mailbench/workload"
)

// Variant is one run of a comparison: a name and the configuration to run.
type Variant struct {
	Name       string
	IMAPTLS    string // the IMAP endpoint's tls mode in this run
	SMTPTLS    string // the SMTP endpoint's tls mode in this run
	Resumption bool
	Config     *workload.Config
}

// Addresses gives the plaintext addresses of endpoints that the workload
// file reaches with implicit TLS (a port that speaks only TLS, e.g. 993):
// the plaintext run needs another port. Empty fields are not needed when
// the endpoint uses "none" or "starttls".
type Addresses struct {
	PlainIMAP, PlainSMTP string
}

// Variants derives the three runs from cfg without modifying it:
//
//	plaintext         both endpoints tls = "none"
//	TLS               each endpoint's own mode, "starttls" where cfg says "none"
//	TLS + resumption  the same with session_resumption = true
//
// The embedded target serves whichever mode each endpoint asks for, so
// its plaintext run needs no other address. The other endpoint settings (ca_file, server_name,
// min_tls_version, insecure_skip_verify, auth) are kept as cfg has them.
// It doesn't perform I/O.
func Variants(cfg *workload.Config, addrs Addresses) ([]Variant, error) {
	if cfg == nil {
		return nil, errors.New("compare: no config")
	}
	tlsMode := func(ep workload.Endpoint) string {
		if ep.TLS == "" || ep.TLS == "none" {
			return "starttls"
		}
		return string(ep.TLS)
	}
	plainAddr := func(ep workload.Endpoint, given, flag string) (string, error) {
		if cfg.Target.Embedded || ep.TLS != "implicit" {
			return ep.Address, nil
		}
		if given == "" {
			return "", fmt.Errorf("compare: %s speaks implicit TLS; the plaintext run needs a plaintext address (%s)", ep.Address, flag)
		}
		return given, nil
	}
	imapPlain, err := plainAddr(cfg.Target.IMAP, addrs.PlainIMAP, "--plain-imap")
	if err != nil {
		return nil, err
	}
	smtpPlain, err := plainAddr(cfg.Target.SMTP, addrs.PlainSMTP, "--plain-smtp")
	if err != nil {
		return nil, err
	}
	imapMode, smtpMode := tlsMode(cfg.Target.IMAP), tlsMode(cfg.Target.SMTP)

	variant := func(name, imapTLS, smtpTLS string, resume bool) Variant {
		c := *cfg // the endpoints are values: changing them leaves cfg alone
		c.Target.IMAP.TLS, c.Target.SMTP.TLS = measure.TLSMode(imapTLS), measure.TLSMode(smtpTLS)
		c.Target.IMAP.SessionResumption, c.Target.SMTP.SessionResumption = resume, resume
		if imapTLS == "none" {
			c.Target.IMAP.Address = imapPlain
		}
		if smtpTLS == "none" {
			c.Target.SMTP.Address = smtpPlain
		}
		return Variant{Name: name, IMAPTLS: imapTLS, SMTPTLS: smtpTLS, Resumption: resume, Config: &c}
	}
	return []Variant{
		variant("plaintext", "none", "none", false),
		variant("TLS", imapMode, smtpMode, false),
		variant("TLS + resumption", imapMode, smtpMode, true),
	}, nil
}

// Row is the outcome of one variant.
type Row struct {
	// Run is the variant's whole report (nil when it could not run), for
	// renderers that show more than the row (the HTML report).
	Run             *report.Run `json:"-"`
	Variant         string
	IMAPTLS         string
	SMTPTLS         string
	Resumption      bool
	SessionsPerHour float64 // achieved in the measurement window
	SessionsStarted int64   // in the measurement window
	// IMAPConnect and SMTPConnect are the functions' compliance rows
	// (operations, p50/p95 of all operations, errors).
	IMAPConnect, SMTPConnect ConnectRow
	// WorstPercent is the lowest % compliant over the rows that ran, and
	// WorstFunction that row.
	WorstPercent  float64
	WorstFunction measure.Function
	Compliant     bool
	// Partial is set when the run was stopped before the end of its
	// measurement window: not a valid result, whatever Compliant says.
	Partial       bool
	ErrorPercent  float64
	TLSErrors     int64         // operations that failed with a TLS error
	CPU           time.Duration // user + system time of the process during the run
	CPUPerSession time.Duration // CPU / SessionsStarted
	// Connect is the run's connect breakdown; nil when not measured.
	Connect *metrics.ConnectSnapshot
	Err     string // the run could not be carried out; the other fields are zero
}

// ConnectRow is the compliance-table view of one connect function.
type ConnectRow struct {
	Operations int64
	Errors     int64
	P50, P95   time.Duration
}

// Result is a whole comparison.
type Result struct {
	Name     string // the workload's name
	Embedded bool
	Rate     float64 // target sessions/hour, the same in every run
	Rows     []Row
	Notes    []string // caveats found while comparing
}

// Options configure Run.
type Options struct {
	Run       campaign.RunFunc
	Addresses Addresses
	// Log receives one line per run started and finished; nil: none.
	Log io.Writer
}

// Run carries out the variants of cfg one after the other and returns the
// comparison. A variant whose run fails gets a row with Err set and the
// comparison continues; cancelling stop ends the comparison after the
// current run (which opts.Run drains), cancelling kill cuts it.
func Run(stop, kill context.Context, cfg *workload.Config, opts Options) (*Result, error) {
	if opts.Run == nil {
		return nil, errors.New("compare: no RunFunc")
	}
	variants, err := Variants(cfg, opts.Addresses)
	if err != nil {
		return nil, err
	}
	res := &Result{Name: cfg.Name, Embedded: cfg.Target.Embedded, Rate: cfg.TargetRate()}
	logf := func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	for i, v := range variants {
		if stop.Err() != nil || kill.Err() != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("stopped before the %q run", v.Name))
			break
		}
		logf("compare-tls: run %d/%d: %s (IMAP %s, SMTP %s)", i+1, len(variants), v.Name, v.IMAPTLS, v.SMTPTLS)
		before := metrics.ProcessCPU()
		run, err := opts.Run(stop, kill, v.Config)
		cpu := metrics.ProcessCPU() - before
		row := Row{Variant: v.Name, IMAPTLS: v.IMAPTLS, SMTPTLS: v.SMTPTLS, Resumption: v.Resumption}
		if err != nil {
			row.Err = err.Error()
			logf("compare-tls: %s: %v", v.Name, err)
		} else {
			row.fill(run, run.Connect, cpu)
			row.Run = run
			logf("compare-tls: %s: %.0f sessions/hour", v.Name, row.SessionsPerHour)
			if run.Partial {
				res.Notes = append(res.Notes, fmt.Sprintf("%s: %s: not a valid result", v.Name, run.FailureReasons("stopped early")))
			}
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, checkRows(res.Rows)...)
	return res, nil
}

// fill sets r from a finished run. It doesn't perform I/O.
func (r *Row) fill(run *report.Run, snap *metrics.ConnectSnapshot, cpu time.Duration) {
	r.SessionsPerHour = run.AchievedSessionsPerHour
	r.SessionsStarted = run.SessionsStarted
	r.Compliant = run.Table.Compliant
	r.Partial = run.Partial
	r.ErrorPercent = run.Table.Errors.Percent
	r.Connect = snap
	r.CPU = cpu
	if run.SessionsStarted > 0 {
		r.CPUPerSession = cpu / time.Duration(run.SessionsStarted)
	}
	if worst, ok := run.WorstRow(); ok {
		r.WorstPercent, r.WorstFunction = worst.PercentCompliant, worst.Function
	}
	for _, row := range run.Table.Rows {
		r.TLSErrors += row.ErrorsByClass[measure.TLS]
		switch row.Function {
		case measure.IMAPConnect:
			r.IMAPConnect = ConnectRow{Operations: row.Operations, Errors: row.Errors, P50: row.P50, P95: row.P95}
		case measure.SMTPConnect:
			r.SMTPConnect = ConnectRow{Operations: row.Operations, Errors: row.Errors, P50: row.P50, P95: row.P95}
		}
	}
}

// checkRows returns caveats: a TLS run that did no handshake, a resumption
// run that resumed nothing, a breakdown that was not measured.
func checkRows(rows []Row) []string {
	var notes []string
	missing := false
	for _, r := range rows {
		if r.Err != "" {
			continue
		}
		if r.Connect == nil {
			missing = true
			continue
		}
		var handshakes, resumed int64
		for _, f := range r.Connect.Functions {
			handshakes += f.Handshakes
			resumed += f.Resumed
		}
		tlsRun := r.IMAPTLS != "none" || r.SMTPTLS != "none"
		switch {
		case tlsRun && handshakes == 0:
			notes = append(notes, fmt.Sprintf("%s: no TLS handshake completed: the runner did not apply TLS, or every handshake failed", r.Variant))
		case !tlsRun && handshakes > 0:
			notes = append(notes, fmt.Sprintf("%s: %d TLS handshakes in the plaintext run", r.Variant, handshakes))
		case r.Resumption && resumed == 0:
			notes = append(notes, fmt.Sprintf("%s: no handshake resumed a session: the server may not support resumption", r.Variant))
		}
	}
	if missing {
		notes = append(notes, "the connect time breakdown was not measured by this runner")
	}
	return notes
}
