package imapclient

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailbench/mailbench/measure"
)

// TestAdminCommands runs the administrative commands against the
// in-process server (INBOX with 5 messages, Sent empty, Archive subscribed)
// and checks their effect with independent commands; none may produce an
// Observation.
func TestAdminCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		run   func(t *testing.T, c *Client)
		check func(t *testing.T, c *Client)
	}{
		{"empty full INBOX", func(t *testing.T, c *Client) {
			n, err := c.EmptyMailbox(ctx, "INBOX")
			if err != nil || n != 5 {
				t.Fatalf("EmptyMailbox(INBOX) = %d, %v; want 5, nil", n, err)
			}
		}, func(t *testing.T, c *Client) {
			wantStatus(t, c, "INBOX", 0)
		}},
		{"empty empty Sent", func(t *testing.T, c *Client) {
			n, err := c.EmptyMailbox(ctx, "Sent")
			if err != nil || n != 0 {
				t.Fatalf("EmptyMailbox(Sent) = %d, %v; want 0, nil", n, err)
			}
		}, func(t *testing.T, c *Client) {
			wantStatus(t, c, "Sent", 0)
			wantStatus(t, c, "INBOX", 5) // untouched
		}},
		{"empty missing mailbox", func(t *testing.T, c *Client) {
			_, err := c.EmptyMailbox(ctx, "Nope")
			if !errors.Is(err, ErrNoMailbox) {
				t.Fatalf("EmptyMailbox(Nope) = %v; want ErrNoMailbox", err)
			}
		}, func(t *testing.T, c *Client) {
			wantStatus(t, c, "INBOX", 5) // the connection is still usable
		}},
		{"delete folder", func(t *testing.T, c *Client) {
			if err := c.DeleteMailbox(ctx, "Archive"); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, c *Client) {
			names, err := c.ListMailboxes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(names, "Archive") || !slices.Contains(names, "Sent") {
				t.Errorf("LIST after DELETE Archive = %v", names)
			}
		}},
		{"delete missing folder", func(t *testing.T, c *Client) {
			if err := c.DeleteMailbox(ctx, "Nope"); err != nil {
				t.Fatalf("DeleteMailbox(Nope) = %v; want nil", err)
			}
		}, func(t *testing.T, c *Client) {
			names, err := c.ListMailboxes(ctx)
			if err != nil || len(names) != 3 {
				t.Errorf("LIST = %v, %v; want the 3 mailboxes", names, err)
			}
		}},
		{"unsubscribe", func(t *testing.T, c *Client) {
			if err := c.Unsubscribe(ctx, "Archive"); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, c *Client) {
			subs, err := c.Lsub(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(subs, "Archive") {
				t.Errorf("LSUB after UNSUBSCRIBE Archive = %v", subs)
			}
		}},
		{"put messages", func(t *testing.T, c *Client) {
			at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
			for i := range 3 {
				msg := testMessage("put-"+itoa(uint64(i)), at, "body\r\n")
				if err := c.PutMessage(ctx, "Sent", msg, []string{`\Seen`}, at); err != nil {
					t.Fatal(err)
				}
			}
		}, func(t *testing.T, c *Client) {
			wantStatus(t, c, "Sent", 3)
			if _, err := c.SelectFolder(ctx, "Sent"); err != nil {
				t.Fatal(err)
			}
			infos, err := c.FetchRangeEnvelope(ctx, 1, 0)
			if err != nil || len(infos) != 3 {
				t.Fatalf("FETCH 1:* = %d, %v", len(infos), err)
			}
			for _, mi := range infos {
				if !slices.Contains(mi.Flags, `\Seen`) || !strings.HasPrefix(mi.ID, "put-") {
					t.Errorf("appended message %+v: want \\Seen and id put-*", mi)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mt := startMem(t, 5)
			rec := &recorder{}
			c, err := Connect(ctx, Config{Address: mt.addr, Timeout: 5 * time.Second, Observer: rec}, testUser, testPassword)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n := len(rec.All()) // the Connect
			tt.run(t, c)
			if got := rec.All()[n:]; len(got) != 0 {
				t.Errorf("administrative commands were observed: %+v", got)
			}
			tt.check(t, c)
		})
	}
}

func wantStatus(t *testing.T, c *Client, mailbox string, want uint32) {
	t.Helper()
	n, err := c.Status(context.Background(), mailbox)
	if err != nil || n != want {
		t.Errorf("STATUS %s = %d, %v; want %d", mailbox, n, err, want)
	}
}

// TestAdminSilentServer: every administrative command gives up after the
// client's timeout against a server that stops answering, as a Timeout,
// and leaves the client closed.
func TestAdminSilentServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ops := []struct {
		verb string
		run  func(c *Client) error
	}{
		{"DELETE", func(c *Client) error { return c.DeleteMailbox(ctx, "Archive") }},
		{"UNSUBSCRIBE", func(c *Client) error { return c.Unsubscribe(ctx, "Archive") }},
		{"SELECT", func(c *Client) error { _, err := c.EmptyMailbox(ctx, "INBOX"); return err }},
		{"STORE", func(c *Client) error { _, err := c.EmptyMailbox(ctx, "INBOX"); return err }},
		{"EXPUNGE", func(c *Client) error { _, err := c.EmptyMailbox(ctx, "INBOX"); return err }},
		{"LIST", func(c *Client) error { _, err := c.ListMailboxes(ctx); return err }},
		{"APPEND", func(c *Client) error { return c.PutMessage(ctx, "Sent", []byte("a\r\n"), nil, time.Time{}) }},
	}
	for _, op := range ops {
		t.Run(op.verb, func(t *testing.T) {
			t.Parallel()
			fs := startFake(t, fakeGreeting, loginOK(func(cmd string) (string, fakeAction) {
				switch {
				case strings.HasPrefix(cmd, op.verb):
					return "", stall
				case strings.HasPrefix(cmd, "SELECT "):
					return selectOK, reply
				case strings.HasPrefix(cmd, "STORE "), strings.HasPrefix(cmd, "EXPUNGE"):
					return "%[1]s OK done\r\n", reply
				}
				return "%[1]s BAD unexpected\r\n", reply
			}))
			c, err := Connect(ctx, Config{Address: fs.addr, Timeout: 5 * time.Second}, testUser, testPassword)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.timeout = shortTimeout
			start := time.Now()
			err = op.run(c)
			checkElapsed(t, start)
			if !errors.Is(err, measure.ErrTimeout) {
				t.Errorf("%s against a silent server: %v; want a timeout", op.verb, err)
			}
			if _, err := c.ListMailboxes(ctx); !errors.Is(err, ErrClosed) {
				t.Errorf("after the timeout: %v; want ErrClosed", err)
			}
		})
	}
}
