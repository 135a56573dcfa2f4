package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mailbench/mailbench/report"
)

// outputFile is a file a command writes when its work is done. It is
// created before any work starts, so that a path that cannot be written
// fails at once as a usage error (exit 2) instead of after a long run.
type outputFile struct {
	path string
	f    *os.File
}

// createOutput creates path for flag ("" : no file, nil). The caller
// writes it with write, or removes it with abandon when the command fails.
func createOutput(flag, path string) (*outputFile, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usage(fmt.Errorf("--%s: %w", flag, err))
	}
	return &outputFile{path: path, f: f}, nil
}

// createReportOutputs creates the --json and --html files of a command
// that writes its report as both ("" : not asked for, nil).
func createReportOutputs(jsonPath, htmlPath string) (jsonOut, htmlOut *outputFile, err error) {
	if jsonOut, err = createOutput("json", jsonPath); err != nil {
		return nil, nil, err
	}
	if htmlOut, err = createOutput("html", htmlPath); err != nil {
		jsonOut.abandon()
		return nil, nil, err
	}
	return jsonOut, htmlOut, nil
}

// write fills the file with fn's output and closes it; nil o does nothing.
func (o *outputFile) write(fn func(io.Writer) error) error {
	if o == nil || o.f == nil {
		return nil
	}
	f := o.f
	o.f = nil
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// abandon removes a file that was never written; nil o, or a written
// file, is left alone.
func (o *outputFile) abandon() {
	if o == nil || o.f == nil {
		return
	}
	o.f.Close()
	os.Remove(o.path)
	o.f = nil
}

// probeOutput checks up front that path can be created for flag, for files
// that the libraries create themselves (--results, --timeseries).
func probeOutput(flag, path string) error {
	o, err := createOutput(flag, path)
	if err != nil {
		return err
	}
	o.abandon()
	return nil
}

// htmlWriter renders runs as one HTML page (docs/html-report.md).
func htmlWriter(runs []*report.Run, opts report.HTMLOptions) func(io.Writer) error {
	return func(w io.Writer) error { return report.WriteHTML(w, runs, opts) }
}

// writeResults writes the outputs of a command over several runs (sweep,
// compare-tls, certify, size): writeText to stdout, writeJSON (nil: none)
// to jsonOut, and one HTML page of runs, titled "mailbench " + title, to
// htmlOut when there is a run to show. nil outputs are not written.
func writeResults(e *env, writeText, writeJSON func(io.Writer) error, jsonOut, htmlOut *outputFile, title string, runs []*report.Run, labels []string) error {
	if err := writeText(e.stdout); err != nil {
		return err
	}
	if writeJSON != nil {
		if err := jsonOut.write(writeJSON); err != nil {
			return err
		}
	}
	if len(runs) == 0 {
		return nil
	}
	return htmlOut.write(htmlWriter(runs, report.HTMLOptions{Title: "mailbench " + title, Labels: labels}))
}
