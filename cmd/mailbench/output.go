package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mailbench/mailbench/internal/campaign"
	"github.com/mailbench/mailbench/internal/campaign/resume"
	"github.com/mailbench/mailbench/internal/lib/atomicfile"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/report/render"
	"github.com/mailbench/mailbench/workload"

	"github.com/mailbench/mailbench/report"
)

// outputFile is a file a command writes when its work is done. Its
// partial file (atomicfile) is created before any work starts, so that a
// path that cannot be written fails at once as a usage error (exit 2)
// instead of after a long run; the file at the path itself is replaced only
// when the new one is complete, so a run that fails or is killed never
// destroys an earlier output.
type outputFile struct {
	flag string
	f    *atomicfile.File
	std  io.Writer // "-": the output goes to this stream (stdout) instead of a file
}

// createOutput starts path for flag ("" : no file, nil). The caller
// writes it with write, or drops it with abandon when the command fails.
func createOutput(flag, path string) (*outputFile, error) {
	if path == "" {
		return nil, nil
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, usage(fmt.Errorf("--%s: %w", flag, err))
	}
	return &outputFile{flag: flag, f: f}, nil
}

// createReportOutputs creates the --json and --html files of a command
// that writes its report as both ("" : not asked for, nil). --json - puts
// the JSON on stdout and moves the text report to stderr, for pipelines
// (jq, CI).
func createReportOutputs(e *env, jsonPath, htmlPath string) (jsonOut, htmlOut *outputFile, err error) {
	if err := distinctOutputs("json", jsonPath, "html", htmlPath); err != nil {
		return nil, nil, err
	}
	if jsonPath == "-" {
		if htmlPath == "-" {
			return nil, nil, usage(errors.New("--json - and --html -: only one output can take stdout"))
		}
		e.jsonToStdout = true
		jsonOut = &outputFile{flag: "json", std: e.stdout}
	} else if jsonOut, err = createOutput("json", jsonPath); err != nil {
		return nil, nil, err
	}
	if htmlOut, err = createOutput("html", htmlPath); err != nil {
		jsonOut.abandon()
		return nil, nil, err
	}
	return jsonOut, htmlOut, nil
}

// write fills the file with fn's output and puts it in place; nil o does
// nothing. A failure leaves the earlier file at the path as it was and is
// an output error (exit 3) naming the flag and the path.
func (o *outputFile) write(fn func(io.Writer) error) error {
	if o != nil && o.std != nil {
		w := o.std
		o.std = nil
		if err := fn(w); err != nil {
			return outputError("--"+o.flag+" - (stdout)", err)
		}
		return nil
	}
	if o == nil || o.f == nil {
		return nil
	}
	f := o.f
	o.f = nil
	if err := fn(f); err != nil {
		f.Abort()
		return outputError("--"+o.flag+" "+f.Path(), err)
	}
	if err := f.Commit(); err != nil {
		return outputError("--"+o.flag, err)
	}
	return nil
}

// abandon drops a file that was never written; nil o, or a written file,
// is left alone.
func (o *outputFile) abandon() {
	if o == nil || o.f == nil {
		return
	}
	o.f.Abort()
	o.f = nil
}

// outputError is an output that could not be written: the run's result is
// not where the user asked for it (exit 3).
func outputError(what string, err error) error {
	return couldNotRun(fmt.Errorf("writing %s failed: %w", what, err))
}

// writeOutputs writes every output of a finished command, the files
// first and the text on stdout last, so that a failing terminal (or
// /dev/full) loses none of the files; every failure is reported, and any
// is exit 3.
func writeOutputs(e *env, writeText func(io.Writer) error, files ...func() error) error {
	var errs []error
	for _, f := range files {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	w, flush := e.fit(e.textOut())
	if err := errors.Join(writeText(w), flush()); err != nil {
		errs = append(errs, outputError("the text report", err))
	}
	return errors.Join(errs...)
}

// distinctOutputs refuses two output flags that name one file (exit 2 at
// start): the second would overwrite the first at the end of the run.
// pairs are flag, path; an empty path or "-" is no file. Paths are
// compared after their symbolic links, and by inode when both exist.
func distinctOutputs(pairs ...string) error {
	type out struct{ flag, path, abs string }
	var seen []out
	for i := 0; i+1 < len(pairs); i += 2 {
		flag, path := pairs[i], pairs[i+1]
		if path == "" || path == "-" {
			continue
		}
		abs := path
		if r, err := filepath.EvalSymlinks(path); err == nil {
			abs = r
		}
		if a, err := filepath.Abs(abs); err == nil {
			abs = a
		}
		for _, o := range seen {
			same := o.abs == abs
			if fa, err := os.Stat(o.path); err == nil {
				if fb, err := os.Stat(path); err == nil && os.SameFile(fa, fb) {
					same = true
				}
			}
			if same {
				return usage(fmt.Errorf("--%s and --%s name the same file (%s): give each output its own", o.flag, flag, path))
			}
		}
		seen = append(seen, out{flag, path, abs})
	}
	return nil
}

// probeOutput checks up front that path can be created for flag, for files
// that the libraries create themselves (--results, --timeseries).
func probeOutput(flag, path string) error {
	if path == "" {
		return nil
	}
	if err := atomicfile.Check(path); err != nil {
		return usage(fmt.Errorf("--%s: %w", flag, err))
	}
	return nil
}

// htmlWriter renders runs as one HTML page (docs/html-report.md).
func htmlWriter(runs []*report.Run, opts render.HTMLOptions) func(io.Writer) error {
	return func(w io.Writer) error { return render.WriteHTML(w, runs, opts) }
}

// writeResults writes the outputs of a command over several runs (sweep,
// compare-tls, certify, size): writeText to stdout, writeJSON (nil: none)
// to jsonOut, and one HTML page of runs, titled "mailbench " + title, to
// htmlOut when there is a run to show. nil outputs are not written.
func writeResults(e *env, res campaign.Result, writeJSON func(io.Writer) error, jsonOut, htmlOut *outputFile, title string) error {
	runs, labels := res.RunsAndLabels()
	return writeOutputs(e, res.WriteText,
		func() error {
			if writeJSON == nil {
				return nil
			}
			return jsonOut.write(writeJSON)
		},
		func() error {
			if len(runs) == 0 {
				return nil
			}
			return htmlOut.write(htmlWriter(runs, render.HTMLOptions{Title: "mailbench " + title, Labels: labels}))
		})
}

// resumeFlag is --resume, embedded in the campaign commands (sweep,
// compare-tls, size, certify).
type resumeFlag struct {
	Resume string `name:"resume" placeholder:"FILE" help:"Record every finished run in the state FILE as it finishes; when FILE exists, continue the campaign it records without repeating its finished runs (refused when another config, command or version made it)."`
}

// wrap puts the state file (if --resume was given) in front of run.
func (f resumeFlag) wrap(e *env, command string, cfg *workload.Config, run campaign.RunFunc) (campaign.RunFunc, *resume.Journal, error) {
	if f.Resume == "" {
		return run, nil, nil
	}
	j, err := resume.Open(f.Resume, command, orchestrator.Version, resume.ConfigHash(cfg))
	if err != nil {
		return nil, nil, usage(fmt.Errorf("--resume: %w", err))
	}
	if n := j.Finished(); n > 0 {
		fmt.Fprintf(e.stderr, "mailbench: --resume %s: %d finished runs recorded; they are not run again\n", f.Resume, n)
	}
	return campaign.RunFunc(j.Wrap(campaign.RunFunc(run))), j, nil
}

// logResume says on stderr what a resumed campaign took from its state file.
func logResume(e *env, j *resume.Journal) {
	if j != nil {
		if n := j.Note(); n != "" {
			fmt.Fprintln(e.stderr, "mailbench: "+n)
		}
	}
}

// writeRun writes one run's report: the text report, and the JSON and
// HTML files when they were asked for (see writeOutputs).
func writeRun(e *env, run *report.Run, jsonOut, htmlOut *outputFile) error {
	return writeOutputs(e, func(w io.Writer) error { return render.WriteTextWidth(w, run, e.textWidth()) },
		func() error { return jsonOut.write(func(w io.Writer) error { return report.WriteJSON(w, run) }) },
		func() error { return htmlOut.write(htmlWriter([]*report.Run{run}, render.HTMLOptions{})) },
	)
}

// runVerdict is the exit of a written report of one run: partial (the
// command's own partial error), no result for the server, not compliant
// (unless judged elsewhere: a shard's provisional verdict), or nil.
func runVerdict(run *report.Run, partial error, judgedElsewhere bool) error {
	switch {
	case run.Partial:
		return partial
	case run.NotAResult() != "":
		return noResult(run.NotAResult())
	case !run.Table.Compliant && !judgedElsewhere:
		return errNotCompliant
	}
	return nil
}
