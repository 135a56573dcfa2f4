package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/mailbench/mailbench/report"
)

// The lines around a JSON report in a log (manage --report-in-log), so
// that `mailbench report` finds it among the log's other lines.
const (
	logReportBegin = "-----BEGIN MAILBENCH REPORT-----"
	logReportEnd   = "-----END MAILBENCH REPORT-----"
)

// writeReportInLog prints run's JSON report between the markers.
func writeReportInLog(w io.Writer, run *report.Run) error {
	var b bytes.Buffer
	if err := report.WriteJSON(&b, run); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s\n%s%s\n", logReportBegin, b.Bytes(), logReportEnd)
	return err
}

// readReportFile is a report file's JSON: the file itself, or, when it is
// a log holding one (kubectl logs of a manager run with --report-in-log),
// the last report between the markers. A log with a begin marker and no
// end is cut: an error, not a shorter report.
func readReportFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndex(data, []byte(logReportBegin+"\n"))
	if i < 0 {
		return data, nil
	}
	body := data[i+len(logReportBegin)+1:]
	j := bytes.Index(body, []byte("\n"+logReportEnd))
	if j < 0 {
		return nil, fmt.Errorf("%s: the log's report has no end line %q: the log was cut", name, logReportEnd)
	}
	return body[:j+1], nil
}
