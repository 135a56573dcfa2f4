package imapclient_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/measure"
)

// Connect, log in, select the INBOX and log out, with a deadline on every
// operation and each one timed as its named function (IMAP Connect, IMAP
// SELECT_INBOX, IMAP Logout).
func ExampleConnect() {
	ctx := context.Background()
	cfg := imapclient.Config{
		Address: "127.0.0.1:1143",
		TLS:     imapclient.TLSStartTLS,
		Timeout: 30 * time.Second,
		Observer: measure.ObserverFunc(func(o measure.Observation) {
			fmt.Printf("%s %v %s\n", o.Function, o.Duration, o.Class)
		}),
	}
	c, err := imapclient.Connect(ctx, cfg, "user1", "secret")
	if err != nil {
		fmt.Println(err) // never holds the password
		return
	}
	defer c.Close()
	mbox, err := c.SelectInbox(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("INBOX holds", mbox.Messages, "messages")
	c.Logout(ctx)
}
