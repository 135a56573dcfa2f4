//go:build unix

package workload

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInputsRefuseFIFO checks that a FIFO given as the users file, a CA
// file or the config is refused at once: opening it would block until
// someone writes to it.
func TestInputsRefuseFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cfgPath := filepath.Join(dir, "bench.toml")
	writeFile(t, cfgPath, "[target.imap]\naddress = \"imap.test:993\"\ntls = \"implicit\"\nca_file = \""+fifo+"\"\n"+
		"[target.smtp]\naddress = \"smtp.test:25\"\n[users]\nfile = \"fifo\"\n[load]\nsessions_per_hour = 10\n")
	done := make(chan string)
	go func() {
		var msgs []string
		if _, err := Load(fifo, Overrides{}); err != nil {
			msgs = append(msgs, err.Error())
		}
		c, err := Load(cfgPath, Overrides{})
		if err != nil {
			done <- "Load: " + err.Error()
			return
		}
		if err := c.CheckInputs(); err != nil {
			msgs = append(msgs, err.Error())
		}
		done <- strings.ReplaceAll(strings.Join(msgs, "\n"), dir, "$DIR")
	}()
	select {
	case got := <-done:
		want := "$DIR/fifo: is not a regular file\n" +
			"$DIR/bench.toml:4: target.imap.ca_file: $DIR/fifo: is not a regular file\n" +
			"$DIR/bench.toml:8: users.file: $DIR/fifo: is not a regular file"
		if got != want {
			t.Errorf("errors:\n%s\nwant:\n%s", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
}
