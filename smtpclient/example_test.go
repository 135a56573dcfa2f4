package smtpclient_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mailbench/mailbench/smtpclient"
)

// Submit one message over STARTTLS with AUTH PLAIN; Breakdown says where
// the connect time went (TCP, TLS, banner and EHLO, authentication).
func ExampleConnect() {
	ctx := context.Background()
	c, err := smtpclient.Connect(ctx, smtpclient.Config{
		Address:  "127.0.0.1:587",
		TLS:      smtpclient.TLSStartTLS,
		Auth:     smtpclient.AuthPlain,
		Username: "user1",
		Password: "secret",
		Timeout:  30 * time.Second,
	})
	if err != nil {
		fmt.Println(err) // never holds the password
		return
	}
	defer c.Close()
	b := c.Breakdown()
	fmt.Println("TCP", b.TCP, "TLS", b.TLS, "greeting", b.Greeting, "auth", b.Auth)
	msg := "From: user1@example.test\r\nTo: user2@example.test\r\nSubject: hello\r\n\r\nHello.\r\n"
	res, err := c.Send(ctx, "user1@example.test", []string{"user2@example.test"}, strings.NewReader(msg))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("queued:", res.Queued)
	c.Quit(ctx)
}
