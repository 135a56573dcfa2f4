package session

import (
	"sync"
	"testing"
)

// TestUserPool: a user is never handed out twice at once; acquire takes
// the first free user from its start (wrapping), fails only when every
// user is busy, and a released user is free again (releasing twice frees
// it once).
func TestUserPool(t *testing.T) {
	p := newUserPool(3)
	for _, tt := range []struct {
		start, want int
		ok          bool
	}{{1, 1, true}, {1, 2, true}, {1, 0, true}, {0, 0, false}} {
		got, ok := p.acquire(tt.start)
		if got != tt.want || ok != tt.ok {
			t.Fatalf("acquire(%d) = %d, %v; want %d, %v", tt.start, got, ok, tt.want, tt.ok)
		}
	}
	p.release(2)
	p.release(2)
	if got, ok := p.acquire(0); got != 2 || !ok {
		t.Fatalf("after releasing 2: acquire(0) = %d, %v", got, ok)
	}
	if _, ok := p.acquire(0); ok {
		t.Fatal("the double release freed user 2 twice")
	}
	if _, ok := newUserPool(0).acquire(0); ok {
		t.Fatal("an empty pool handed out a user")
	}
}

// TestUserPoolConcurrent: under concurrent use, no user is ever held by
// two goroutines at once.
func TestUserPoolConcurrent(t *testing.T) {
	const users, workers, rounds = 8, 16, 2000
	p := newUserPool(users)
	var mu sync.Mutex
	held := make([]bool, users)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				i, ok := p.acquire(w + r)
				if !ok {
					continue
				}
				mu.Lock()
				if held[i] {
					t.Errorf("user %d handed out twice", i)
				}
				held[i] = true
				mu.Unlock()
				mu.Lock()
				held[i] = false
				mu.Unlock()
				p.release(i)
			}
		}()
	}
	wg.Wait()
}
