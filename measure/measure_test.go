package measure

import (
	"testing"
	"time"
)

func TestConnectPhasesStalled(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name              string
		p                 ConnectPhases
		stalled, assessed bool
	}{
		{"Postfix, TCP_NODELAY client", ConnectPhases{TLSUsed: true, ClearExchange: ms / 2, FirstExchange: 44 * ms}, true, true},
		{"no stall", ConnectPhases{TLSUsed: true, ClearExchange: ms / 2, FirstExchange: 2 * ms}, false, true},
		{"a slow server: slow in clear text too", ConnectPhases{TLSUsed: true, ClearExchange: 20 * ms, FirstExchange: 60 * ms}, false, true},
		{"just under the minimum", ConnectPhases{TLSUsed: true, ClearExchange: ms / 10, FirstExchange: StallMin - 1}, false, true},
		{"implicit TLS: nothing to compare with", ConnectPhases{TLSUsed: true, FirstExchange: 44 * ms}, false, false},
		{"no TLS", ConnectPhases{ClearExchange: ms, FirstExchange: 44 * ms}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, a := tt.p.Stalled()
			if s != tt.stalled || a != tt.assessed {
				t.Errorf("Stalled() = %v, %v; want %v, %v", s, a, tt.stalled, tt.assessed)
			}
		})
	}
}
