package mailboxes

import (
	"testing"
	"time"

	"github.com/mailbench/mailbench/internal/testing/testconfig"
)

func TestPopulationReproducible(t *testing.T) {
	cfg := testconfig.Quick(t, time.Second)
	a, b := For(cfg, "user1"), For(cfg, "user1")
	if len(a) != len(b) {
		t.Fatal("different plans")
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("plan differs at %d: %v vs %v", i, a[i], b[i])
		}
	}
	if a[0].Mailbox != "INBOX" || a[0].Messages != cfg.Mailboxes.InboxMessages {
		t.Errorf("INBOX plan %v", a[0])
	}
}
