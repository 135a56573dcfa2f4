package imapclient

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mailbench/mailbench/delivery"
	embedded "github.com/mailbench/mailbench/internal/demo"
	"github.com/mailbench/mailbench/internal/lib/message"
	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/workload"
)

// benchInboxSize is the default INBOX population of mailbench init.
const benchInboxSize = 50

// BenchmarkIMAPCheckSession is one "check" session against the embedded
// target on 127.0.0.1: Connect (LOGIN), SELECT INBOX, FETCH of the newest
// 20 of 50 messages (4 KiB each), LOGOUT. The target runs in the same
// process, so ns/op and allocs/op include the server's share as well as
// the generator's; the benchmark guards their sum against regressions.
func BenchmarkIMAPCheckSession(b *testing.B) {
	gen, err := message.NewGenerator(1, []int{4 << 10})
	if err != nil {
		b.Fatal(err)
	}
	const login, password = "user1", "bench-secret"
	populate := func(u workload.User, mailbox string, add func([]byte, time.Time) error) error {
		if mailbox != "INBOX" {
			return nil
		}
		t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		for i := range benchInboxSize {
			env := message.Envelope{
				ID: delivery.NewID(1, uint64(i+1)), From: "user2@example.test", To: []string{u.Login + "@example.test"},
				Subject: fmt.Sprintf("message %d", i+1), Sent: t.Add(time.Duration(i) * time.Minute),
			}
			if err := add(gen.Message(env, 4<<10, uint64(i)), env.Sent); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tg, err := embedded.Start(ctx, embedded.Options{Users: []workload.User{{Login: login, Password: password}}, Populate: populate})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	cfg := Config{Address: tg.IMAPAddr(), Timeout: 5 * time.Second, Observer: measure.Discard}

	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Connect(ctx, cfg, login, password)
		if err != nil {
			cancel()
			b.Fatalf("Connect: %v", err)
		}
		mb, err := c.SelectInbox(ctx)
		if err != nil || mb.Messages != benchInboxSize {
			c.Close()
			cancel()
			b.Fatalf("SELECT INBOX = %+v, %v; want %d messages", mb, err, benchInboxSize)
		}
		infos, err := c.FetchRangeEnvelope(ctx, mb.Messages-19, mb.Messages)
		if err != nil || len(infos) != 20 {
			c.Close()
			cancel()
			b.Fatalf("FETCH = %d messages, %v; want 20", len(infos), err)
		}
		if err := c.Logout(ctx); err != nil {
			cancel()
			b.Fatalf("LOGOUT: %v", err)
		}
		cancel()
	}
}
