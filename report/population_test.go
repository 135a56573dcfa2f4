package report

import "testing"

// Two shards' populations merge by group name, counts and plans summed,
// a group only one shard had kept (render's TestPopulationText shows the
// text of such a merge).
func TestPopulationMerge(t *testing.T) {
	a := &PopulationSummary{Groups: []PopulationGroup{
		{Name: "spec/spec", Users: 10, PlannedSessionsPerHour: 48},
		{Name: "heavy/desktop", Users: 20, Client: "desktop", PlannedConnections: 40, PlannedReceivedPerHour: 200, Held: 40, Connects: 40, Attempts: 41, Resyncs: 20, NewMail: 30, Opened: 25, Removed: 10},
	}}
	b := &PopulationSummary{Groups: []PopulationGroup{
		{Name: "heavy/desktop", Users: 20, Client: "desktop", PlannedConnections: 40, PlannedReceivedPerHour: 200, Held: 39, Connects: 40, Attempts: 40, Resyncs: 20, NewMail: 28, Opened: 20, Removed: 9, Forgotten: 2},
		{Name: "light/mobile", Users: 5, Client: "mobile", PlannedConnections: 4.5, Held: 5, Connects: 7, Attempts: 7},
	}}
	var m *PopulationSummary
	m = m.add(a).add(b)
	if len(m.Groups) != 3 {
		t.Fatalf("groups %+v", m.Groups)
	}
	h := m.Groups[1]
	if h.Users != 40 || h.Held != 79 || h.Attempts != 81 || h.NewMail != 58 || h.Opened != 45 || h.Removed != 19 || h.Forgotten != 2 || h.PlannedConnections != 80 {
		t.Errorf("merged heavy/desktop %+v", h)
	}
	if a.Groups[1].Users != 20 {
		t.Errorf("merge changed its input: %+v", a.Groups[1])
	}
}
