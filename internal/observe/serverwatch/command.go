package serverwatch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/mailbench/mailbench/workload"
)

// maxCommandOutput bounds what a command's output is read for its number.
const maxCommandOutput = 64 << 10

// command is a [[server.commands]] source: the first number its output
// prints.
type command struct{ cfg workload.ServerCommandSource }

func newCommand(cfg workload.ServerCommandSource) *command { return &command{cfg: cfg} }

func (c *command) name() string { return c.cfg.Name }
func (c *command) kind() string { return "command" }

var firstNumber = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`)

func (c *command) sample(ctx context.Context, _ time.Time) ([]value, error) {
	cmd := exec.CommandContext(ctx, c.cfg.Run[0], c.cfg.Run[1:]...)
	var out limitedBuffer
	cmd.Stdout = &out
	cmd.WaitDelay = 100 * time.Millisecond // a child that keeps the pipe open is not waited for
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.cfg.Run[0], err)
	}
	m := firstNumber.Find(out.Bytes())
	if m == nil {
		return nil, fmt.Errorf("%s printed no number", c.cfg.Run[0])
	}
	v, err := strconv.ParseFloat(string(m), 64)
	if err != nil {
		return nil, err
	}
	return []value{{c.cfg.Name, "", v}}, nil
}

// limitedBuffer keeps the first maxCommandOutput bytes and drops the rest.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxCommandOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*limitedBuffer)(nil)
