package smtpsink_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mailbench/mailbench/measure"
	"github.com/mailbench/mailbench/smtpclient"
	"github.com/mailbench/mailbench/smtpsink"
)

// A sink on a loopback port accepts mail, counts it and discards the
// bodies; smtpclient submits to it and times each operation.
func Example() {
	sink, err := smtpsink.New(smtpsink.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sink.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()

	ctx := context.Background()
	var timed []measure.Function
	c, err := smtpclient.Connect(ctx, smtpclient.Config{
		Address:  sink.Addr().String(),
		Timeout:  5 * time.Second,
		Observer: measure.ObserverFunc(func(o measure.Observation) { timed = append(timed, o.Function) }),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg := "From: a@example.test\r\nTo: b@remote.test\r\nSubject: hello\r\n\r\nHello.\r\n"
	if _, err := c.Send(ctx, "a@example.test", []string{"b@remote.test"}, strings.NewReader(msg)); err != nil {
		fmt.Println(err)
		return
	}
	c.Quit(ctx)

	n := sink.Counts()
	fmt.Printf("sink: %d message, %d recipient\n", n.Messages, n.Recipients)
	fmt.Println("timed:", timed)
	// Output:
	// sink: 1 message, 1 recipient
	// timed: [SMTP Connect SMTP Data]
}
