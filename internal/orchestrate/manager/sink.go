package manager

import (
	"bytes"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/internal/orchestrate/orchestrator"
	"github.com/mailbench/mailbench/smtpsink"
	"github.com/mailbench/mailbench/workload"
)

// StartSink is Options.StartSink of the mailbench manage command: the
// sink of cfg's [sink] (listen address, TLS, limits), recording every
// arrival by message id as `mailbench sink --json` does. With
// sink.enabled false it starts none, and the shards' remote deliveries
// stay pending.
func StartSink(cfg *workload.Config) (StepSink, error) {
	rec := smtpsink.NewRecord()
	s, err := orchestrator.StartSink(cfg, rec.Add)
	if err != nil || s == nil {
		return nil, err
	}
	return &recordedSink{sink: s, rec: rec}, nil
}

type recordedSink struct {
	sink *smtpsink.Sink
	rec  *smtpsink.Record
}

func (r *recordedSink) Report() (*delivery.SinkReport, error) {
	var buf bytes.Buffer
	if err := r.rec.WriteJSON(&buf, r.sink); err != nil {
		return nil, err
	}
	return delivery.ReadSinkReport(&buf)
}

func (r *recordedSink) Addr() string { return r.sink.Addr().String() }
func (r *recordedSink) Close() error { return r.sink.Close() }
