package delivery

// ReconcileExternal is Reconcile for a run whose remote mail reaches a sink
// in another process: the remote deliveries not seen arrive are pending,
// not lost, and are returned for ReconcileSink. Call it where Reconcile
// would be called.
func (l *Ledger) ReconcileExternal() (Reconciliation, *Pending) {
	r := l.Reconcile()
	p := &Pending{RunID: l.runID}
	l.mu.Lock()
	for c, ch := range l.msgs {
		if ch == nil {
			continue
		}
		for i := range ch {
			m := &ch[i]
			if m.accepted == 0 || m.nRemote == 0 {
				continue
			}
			from := m.rcptStart + uint32(m.nLocal)
			for j := from; j < from+uint32(m.nRemote); j++ {
				if rc := l.rcpt(j); rc.flags&fSeen == 0 {
					p.Deliveries = append(p.Deliveries, PendingDelivery{Seq: uint64(c)<<chunkBits | uint64(i), Key: rc.key, Accepted: m.accepted})
				}
			}
		}
	}
	r.PendingRemote = int64(len(p.Deliveries))
	r.LostRemote -= r.PendingRemote
	r.Lost -= r.PendingRemote
	r.MissingSample = nil // the remote ones are pending, not missing
	if r.Lost > 0 {
		r.MissingSample = l.missingSample(false)
	}
	l.mu.Unlock()
	return r, p
}
