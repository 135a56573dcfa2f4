package report

// PopulationSummary is [population] by group: what each group was
// planned to do (derived from its profiles) beside what its clients did
// (counted over the whole run, every phase).
type PopulationSummary struct {
	Groups []PopulationGroup `json:"groups"`
}

// PopulationGroup is one group of the population.
type PopulationGroup struct {
	Name   string `json:"name"`   // "heavy/desktop"
	Users  int    `json:"users"`  // this run's (a shard's own)
	Client string `json:"client"` // the client profile's source
	// Derived from the profiles, per hour of the working day.
	PlannedConnections     float64 `json:"planned_connections"`
	PlannedReceivedPerHour float64 `json:"planned_received_per_hour"`
	PlannedSentPerHour     float64 `json:"planned_sent_per_hour"`
	PlannedSessionsPerHour float64 `json:"planned_sessions_per_hour,omitempty"` // spec groups
	// Counted: connections held at the end of the measurement window;
	// logins (of attempts); resyncs; new messages fetched; messages opened;
	// deleted or moved; actions forgotten by users more than 256 behind.
	Held      int64 `json:"held"`
	Connects  int64 `json:"connects"`
	Attempts  int64 `json:"attempts"`
	Resyncs   int64 `json:"resyncs"`
	NewMail   int64 `json:"new_mail"`
	Opened    int64 `json:"opened"`
	Removed   int64 `json:"removed"`
	Forgotten int64 `json:"forgotten,omitempty"`
	// Window is what the group did in the measurement window (nil when
	// the run ended before it did).
	Window *PopulationWindow `json:"window,omitempty"`
}

// PopulationWindow is a group's actions in the measurement window, and
// the window's length: its per-hour rates are measured.
type PopulationWindow struct {
	Seconds  float64 `json:"seconds"`
	Connects int64   `json:"connects"`
	Resyncs  int64   `json:"resyncs"`
	NewMail  int64   `json:"new_mail"`
	Opened   int64   `json:"opened"`
	Removed  int64   `json:"removed"`
}

func (w *PopulationWindow) add(o *PopulationWindow) *PopulationWindow {
	if o == nil {
		return w
	}
	if w == nil {
		c := *o
		return &c
	}
	return &PopulationWindow{Seconds: max(w.Seconds, o.Seconds), Connects: w.Connects + o.Connects, Resyncs: w.Resyncs + o.Resyncs,
		NewMail: w.NewMail + o.NewMail, Opened: w.Opened + o.Opened, Removed: w.Removed + o.Removed}
}

// add is two shards' populations together: the groups' counts summed by
// name, the planned figures too (each shard plans its own users).
func (p *PopulationSummary) add(o *PopulationSummary) *PopulationSummary {
	if o == nil {
		return p
	}
	if p == nil {
		p = &PopulationSummary{}
	}
	s := &PopulationSummary{Groups: append([]PopulationGroup(nil), p.Groups...)}
	for _, g := range o.Groups {
		i := 0
		for i < len(s.Groups) && s.Groups[i].Name != g.Name {
			i++
		}
		if i == len(s.Groups) {
			s.Groups = append(s.Groups, g)
			continue
		}
		m := &s.Groups[i]
		m.Users += g.Users
		m.PlannedConnections += g.PlannedConnections
		m.PlannedReceivedPerHour += g.PlannedReceivedPerHour
		m.PlannedSentPerHour += g.PlannedSentPerHour
		m.PlannedSessionsPerHour += g.PlannedSessionsPerHour
		m.Held += g.Held
		m.Connects += g.Connects
		m.Attempts += g.Attempts
		m.Resyncs += g.Resyncs
		m.NewMail += g.NewMail
		m.Opened += g.Opened
		m.Removed += g.Removed
		m.Forgotten += g.Forgotten
		m.Window = m.Window.add(g.Window)
	}
	return s
}
