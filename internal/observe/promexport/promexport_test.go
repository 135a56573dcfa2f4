package promexport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/run/schedule"
	"github.com/mailbench/mailbench/measure"
)

func TestEndpointServesTheRun(t *testing.T) {
	e := New("quick")
	e.Observe(measure.Observation{Function: measure.IMAPConnect, Duration: 3 * time.Millisecond})
	e.Observe(measure.Observation{Function: measure.IMAPConnect, Duration: 7 * time.Second, Class: measure.Timeout, Err: errors.New("timed out")})
	e.Observe(measure.Observation{Function: measure.DeliveryLocal, Duration: 2 * time.Second})
	e.SetSessions(Sessions{User: schedule.Counts{Scheduled: 10, Started: 9, Late: 2, Dropped: 1}, Active: 4, Elapsed: 90 * time.Second, Connected: 7, ConnectedTarget: 8})
	e.SetServer(map[string]float64{"host.cpu_percent": 42.5, "dovecot.cpu_cores": 0.8})
	e.SetServer(map[string]float64{"host.cpu_percent": 61})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := e.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	for _, want := range []string{
		`mailbench_operation_duration_seconds_bucket{function="IMAP Connect",run="quick",le="0.005"} 1`,
		`mailbench_operation_duration_seconds_bucket{function="IMAP Connect",run="quick",le="5"} 1`,
		`mailbench_operation_duration_seconds_count{function="IMAP Connect",run="quick"} 2`,
		`mailbench_operation_duration_seconds_count{function="Delivery Time (local)",run="quick"} 1`,
		`mailbench_operations_total{class="ok",function="IMAP Connect",run="quick"} 1`,
		`mailbench_operations_total{class="timeout",function="IMAP Connect",run="quick"} 1`,
		`mailbench_sessions_scheduled_total{run="quick"} 10`,
		`mailbench_sessions_started_total{run="quick"} 9`,
		`mailbench_sessions_late_total{run="quick"} 2`,
		`mailbench_sessions_dropped_total{run="quick"} 1`,
		`mailbench_sessions_active{run="quick"} 4`,
		`mailbench_connected_clients{run="quick"} 7`,
		`mailbench_connected_clients_target{run="quick"} 8`,
		`mailbench_run_elapsed_seconds{run="quick"} 90`,
		`mailbench_server_figure{figure="host.cpu_percent",run="quick"} 61`,
		`mailbench_server_figure{figure="dovecot.cpu_cores",run="quick"} 0.8`,
		`go_gc_duration_seconds`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}

	// Cancelling ctx stops the endpoint.
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := client.Get("http://" + addr.String() + "/metrics")
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the endpoint still serves after its context ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeBadAddress(t *testing.T) {
	if _, err := New("x").Serve(context.Background(), "127.0.0.1:-1"); err == nil {
		t.Error("Serve on a bad address succeeded")
	}
}
