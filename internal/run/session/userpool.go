package session

import "sync"

// userPool hands out users that are not already in a session, so that one
// simulated user never runs two sessions at once (as a person would not).
// It is safe for concurrent use.
type userPool struct {
	mu   sync.Mutex
	busy []bool
	free int
}

func newUserPool(n int) *userPool { return &userPool{busy: make([]bool, n), free: n} }

// acquire takes the first free user at or after index start (wrapping), or
// returns ok=false when every user is busy. Starting from a seeded index
// keeps the choice reproducible for the same timing.
func (p *userPool) acquire(start int) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.busy)
	if p.free == 0 || n == 0 {
		return 0, false
	}
	for k := range n {
		i := (start + k) % n
		if !p.busy[i] {
			p.busy[i] = true
			p.free--
			return i, true
		}
	}
	return 0, false
}

func (p *userPool) release(i int) {
	p.mu.Lock()
	if p.busy[i] {
		p.busy[i] = false
		p.free++
	}
	p.mu.Unlock()
}
