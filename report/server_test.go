package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/metrics"
)

func serverFixture() *metrics.ServerReport {
	return &metrics.ServerReport{IntervalSeconds: 10, Cores: 2,
		Sources: []metrics.ServerSource{{Name: "host", Kind: "host", Samples: 60}, {Name: "queue", Kind: "command", Samples: 60, Failures: 3, LastError: "no answer within 2s ([server] timeout)"}},
		Figures: []metrics.ServerFigure{
			{Name: "host.cpu_percent", Unit: "%", Mean: 81.5, Peak: 97.2, Samples: 60},
			{Name: "host.disk_util_percent", Unit: "%", Mean: 22, Peak: 40, Samples: 60},
			{Name: "dovecot.cpu_cores", Unit: "cores", Mean: 1.1, Peak: 1.6, Samples: 60},
			{Name: "dovecot.rss_bytes", Unit: "bytes", Mean: 210 << 20, Peak: 230 << 20, Samples: 60},
			{Name: "mailbench.cpu_cores", Unit: "cores", Mean: 0.4, Peak: 0.5, Samples: 60},
		}}
}

// TestServerSection: the text report lists each source's figures and the
// failing sources; a criterion above its max fails the run with its own
// row, one never measured too, and one within passes.
func TestServerSection(t *testing.T) {
	r := compliantRun()
	r.Server = serverFixture()
	r.ServerCriteria = []ServerCriterion{{Figure: "host.cpu_percent", Max: 80}, {Figure: "dovecot.cpu_cores", Max: 1.5}, {Figure: "queue", Max: 100}}
	r.Evaluate(r.Table.Rules())
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, s := range []string{
		"Server (observed beside the run every 10 s",
		"host        cpu_percent 81.5 / 97.2%, disk_util_percent 22.0 / 40.0%",
		"dovecot     cpu_cores 1.10 / 1.60 cores, rss_bytes 210.0 MiB / 230.0 MiB",
		"mailbench   cpu_cores 0.40 / 0.50 cores (the generator itself",
		"queue       3 of 60 samples failed (last: no answer within 2s",
		"Server host.cpu_percent                  FAIL  mean 81.50 is above 80",
		"Server dovecot.cpu_cores                 PASS  mean 1.10 is at most 1.50",
		"  - Server queue: never measured",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
	if r.Table.Compliant || !strings.Contains(strings.Join(r.Table.Failing, ","), "Server host.cpu_percent") {
		t.Errorf("compliant %v, failing %q", r.Table.Compliant, r.Table.Failing)
	}
	if got := r.ServerLine(); got != "host CPU 82% of 2 cores (peak 97%); dovecot 1.10 cores; mailbench 0.40 cores; disk 22% busy (peak 40%)" {
		t.Errorf("ServerLine %q", got)
	}
	// The host's cores beyond the named processes and mailbench are said
	// as the rest, not left to be read as the server's.
	rest := compliantRun()
	rest.Server = serverFixture()
	rest.Server.Figures = append(rest.Server.Figures, metrics.ServerFigure{Name: "host.cpu_cores", Unit: "cores", Mean: 1.63, Peak: 1.94, Samples: 60})
	if got := rest.ServerLine(); !strings.Contains(got, "mailbench 0.40 cores; the rest 0.13 cores (kernel threads, other processes; derived: host − the above)") {
		t.Errorf("ServerLine %q", got)
	}
	// Within its max, the criteria leave the verdict alone.
	c := compliantRun()
	c.Server = serverFixture()
	c.ServerCriteria = []ServerCriterion{{Figure: "host.cpu_percent", Max: 90}}
	c.Evaluate(c.Table.Rules())
	if !c.Table.Compliant {
		t.Errorf("failing %q", c.Table.Failing)
	}
	// The JSON carries them back.
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSON(&j)
	if err != nil {
		t.Fatal(err)
	}
	if back.Server == nil || len(back.Server.Figures) != 5 || len(back.ServerCriteria) != 3 || back.ServerCriteria[0].Pass {
		t.Errorf("read back: %+v %+v", back.Server, back.ServerCriteria)
	}
}

// TestServerInHTML: the page has the server's section and its chart,
// with the process groups' cores and the host's percent on their own axis.
func TestServerInHTML(t *testing.T) {
	r := compliantRun()
	r.Server = serverFixture()
	for i := range 3 {
		r.Server.Timeline = append(r.Server.Timeline, metrics.ServerPoint{At: r.Started.Add(time.Duration(i) * 10 * time.Second),
			Values: map[string]float64{"host.cpu_percent": 80 + float64(i), "dovecot.cpu_cores": 1 + 0.1*float64(i), "mailbench.cpu_cores": 0.4}})
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, []*Run{r}, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range []string{"<h3>The server&#39;s resources</h3>", `id="run-server"`, "dovecot     cpu_cores 1.10 / 1.60 cores",
		`"label":"host.cpu_percent"`, `"axis":"y2"`, `"label":"dovecot.cpu_cores"`} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}
