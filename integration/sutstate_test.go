package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sutDir is the Dovecot+Postfix SUT's state dir (scripts/sut/lib.sh).
func sutDir() string {
	if d := os.Getenv("MAILBENCH_SUT_DIR"); d != "" {
		return d
	}
	return "/var/lib/mailbench-sut"
}

// startSUT runs scripts/sut/start: it starts what is not running with the
// limits up gives (a daemon started straight from the test would keep the
// test's fd limit: Go gives its children the soft limit it found, often
// 1024, where up gives Dovecot up to 65536), waits for IMAP, LMTP and
// SMTP, and makes Postfix retry its deferred mail now.
// Its args are the script's (--dovecot: start Dovecot only).
func startSUT(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("bash", append([]string{filepath.Join("..", "scripts", "sut", "start")}, args...)...).CombinedOutput()
	if err != nil {
		t.Errorf("scripts/sut/start: %v: %s", err, out)
	}
}

// dovecotFDLimit is the soft open-files limit of the SUT's Dovecot master,
// from /proc ("" if it is not running).
func dovecotFDLimit() string {
	pid, err := os.ReadFile(filepath.Join(sutDir(), "run", "dovecot", "master.pid"))
	if err != nil {
		return ""
	}
	limits, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "limits"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(limits), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && strings.HasPrefix(l, "Max open files") {
			return f[3]
		}
	}
	return ""
}

// queuedMessage is one message of `postqueue -j` (Postfix 3.1+), one JSON
// object a line.
type queuedMessage struct {
	Queue      string `json:"queue_name"`
	ID         string `json:"queue_id"`
	Recipients []struct {
		Address     string `json:"address"`
		DelayReason string `json:"delay_reason"`
	} `json:"recipients"`
}

// postfixQueue lists the SUT Postfix's queue.
func postfixQueue() ([]queuedMessage, error) {
	out, err := exec.Command("postqueue", "-c", filepath.Join(sutDir(), "postfix"), "-j").Output()
	if err != nil {
		return nil, fmt.Errorf("postqueue -j: %v", err)
	}
	var q []queuedMessage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m queuedMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("postqueue -j: %v in %q", err, sc.Text())
		}
		q = append(q, m)
	}
	return q, sc.Err()
}

// localRecipients counts the queued recipients in the SUT's own domain:
// mail Postfix still has to hand to Dovecot. (Mail for the sink may wait
// for good between tests: no sink listens then.)
func localRecipients(q []queuedMessage) int {
	n := 0
	for _, m := range q {
		for _, r := range m.Recipients {
			if strings.HasSuffix(r.Address, "@example.test") {
				n++
			}
		}
	}
	return n
}

// waitLocalQueueEmpty waits, up to within, until Postfix holds no mail for
// Dovecot, so that a test which made Postfix defer local mail leaves none
// to land in the next test's mailboxes and timings. Failing to drain is an
// error of the test that caused it, with the queue's reasons.
func waitLocalQueueEmpty(t *testing.T, within time.Duration) {
	t.Helper()
	if err := drainLocalQueue(within); err != nil {
		t.Error(err)
	}
}

// drainLocalQueue polls Postfix's queue until it holds no mail for
// Dovecot, or says what is left after within.
func drainLocalQueue(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		q, err := postfixQueue()
		if err != nil {
			return fmt.Errorf("Postfix's queue: %v", err)
		}
		n := localRecipients(q)
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Postfix still holds %d recipients for Dovecot after %v: %s", n, within, queueReasons(q))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// flushLocalQueue starts a test against the SUT with no mail of an earlier
// test still queued for Dovecot: if there is some (an earlier test stopped
// Dovecot, or Postfix marked LMTP dead and waits out its backoff, 300 s),
// it asks Postfix to deliver it now (postqueue -f, which also forgets dead
// destinations) and waits for that, up to 30 s, saying so in the log. A
// no-op without root or without the SUT's Postfix.
func flushLocalQueue(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	q, err := postfixQueue()
	if err != nil || localRecipients(q) == 0 {
		return
	}
	t.Logf("Postfix holds mail of an earlier test for Dovecot (%s): postqueue -f", queueReasons(q))
	if out, err := exec.Command("postqueue", "-c", filepath.Join(sutDir(), "postfix"), "-f").CombinedOutput(); err != nil {
		t.Logf("postqueue -f: %v: %s", err, out)
		return
	}
	if err := drainLocalQueue(30 * time.Second); err != nil {
		t.Log(err) // this test goes on; its own checks say whether that matters
	}
}

// queueReasons summarises a queue: messages per queue and the distinct
// delay reasons (at most five).
func queueReasons(q []queuedMessage) string {
	perQueue := map[string]int{}
	var reasons []string
	for _, m := range q {
		perQueue[m.Queue]++
		for _, r := range m.Recipients {
			if r.DelayReason != "" && !slices.Contains(reasons, r.DelayReason) && len(reasons) < 5 {
				reasons = append(reasons, r.DelayReason)
			}
		}
	}
	return fmt.Sprintf("%d messages %v; reasons %q", len(q), perQueue, reasons)
}

// logSUTStateOnFailure, registered by needSUT, logs what a failed test
// needs to be explained from CI's output alone: Dovecot's fd limit,
// Postfix's queue with its delay reasons, and the servers' last warnings.
func logSUTStateOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir := sutDir()
		var b strings.Builder
		fmt.Fprintf(&b, "SUT state after the failure (%s):\n", dir)
		fmt.Fprintf(&b, "  dovecot master: soft open-files limit %q\n", dovecotFDLimit())
		if q, err := postfixQueue(); err != nil {
			fmt.Fprintf(&b, "  postfix queue: %v\n", err)
		} else {
			fmt.Fprintf(&b, "  postfix queue: %d local recipients; %s\n", localRecipients(q), queueReasons(q))
		}
		tailMatching(&b, filepath.Join(dir, "log", "dovecot.log"), 20, func(l string) bool {
			return (strings.Contains(l, "Warning") || strings.Contains(l, "Error") || strings.Contains(l, "Fatal") || strings.Contains(l, "Panic")) &&
				!strings.Contains(l, "Inotify instance limit")
		})
		tailMatching(&b, filepath.Join(dir, "log", "postfix.log"), 20, func(l string) bool {
			return strings.Contains(l, "warning") || strings.Contains(l, "status=deferred") || strings.Contains(l, "status=bounced") ||
				strings.Contains(l, "suspended") || (strings.Contains(l, "status=sent") && !strings.Contains(l, " delay=0"))
		})
		t.Log(b.String())
	})
}

// tailMatching writes the last n lines of file that keep accepts (reading
// at most its last 4 MiB).
func tailMatching(b *strings.Builder, file string, n int, keep func(string) bool) {
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(b, "  %s: %v\n", file, err)
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 4<<20 {
		f.Seek(st.Size()-4<<20, 0)
	}
	var last []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); keep(l) {
			if len(last) == n {
				last = last[1:]
			}
			last = append(last, l)
		}
	}
	fmt.Fprintf(b, "  %s, last %d lines of interest:\n", file, len(last))
	for _, l := range last {
		fmt.Fprintf(b, "    %s\n", l)
	}
}
