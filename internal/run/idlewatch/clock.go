package idlewatch

import (
	"context"
	"fmt"
	"time"

	"github.com/mailbench/mailbench/delivery"
	"github.com/mailbench/mailbench/imapclient"
	"github.com/mailbench/mailbench/workload"
)

// ProbeClock APPENDs a small probe message, without a date, to mailbox of
// user u, reads back the INTERNALDATE the server gave it, and deletes it
// again (UID STORE \Deleted and, with UIDPLUS, UID EXPUNGE; without
// UIDPLUS it stays flagged \Deleted). Every command has cfg's deadline;
// none is timed.
func ProbeClock(ctx context.Context, cfg imapclient.Config, u workload.User, mailbox string) (delivery.ClockCheck, error) {
	cfg.Observer, cfg.Unilateral = nil, nil
	cl, err := imapclient.Connect(ctx, cfg, u.Login, u.Password)
	if err != nil {
		return delivery.ClockCheck{}, err
	}
	defer cl.Close()
	id := fmt.Sprintf("clock-probe-%d", time.Now().UnixNano())
	msg := []byte("From: mailbench <probe@mailbench.invalid>\r\nSubject: mailbench clock probe\r\nX-Mailbench-Id: " + id +
		"\r\n\r\nmailbench compares the server's clock with its own; this message is deleted again.\r\n")
	t0 := time.Now()
	uid, err := cl.Append(ctx, mailbox, msg, nil, time.Time{})
	t1 := time.Now()
	if err != nil {
		return delivery.ClockCheck{}, err
	}
	mb, err := cl.SelectFolder(ctx, mailbox)
	if err != nil {
		return delivery.ClockCheck{}, err
	}
	var infos []delivery.MessageInfo
	if uid != 0 {
		infos, err = cl.UIDFetchIDs(ctx, uid, uid)
	} else if mb.Messages > 0 {
		infos, err = cl.FetchIDs(ctx, mb.Messages, mb.Messages)
	}
	if err != nil {
		return delivery.ClockCheck{}, err
	}
	var idate time.Time
	for _, mi := range infos {
		if mi.ID == id {
			idate, uid = mi.InternalDate, mi.UID
		}
	}
	if idate.IsZero() {
		return delivery.ClockCheck{}, fmt.Errorf("idlewatch: clock probe: the appended probe was not found in %s", mailbox)
	}
	if uid != 0 && cl.UIDStore(ctx, uid) == nil && cl.Has("UIDPLUS") {
		_ = cl.UIDExpunge(ctx, uid)
	}
	_ = cl.Logout(ctx)
	mid := t0.Add(t1.Sub(t0) / 2)
	server := idate
	if server.Nanosecond() == 0 {
		server = server.Add(500 * time.Millisecond)
	}
	return delivery.ClockCheck{
		SkewMs:        server.Sub(mid).Milliseconds(),
		UncertaintyMs: (500*time.Millisecond + t1.Sub(t0)/2).Milliseconds(),
		Method:        "APPEND probe to " + mailbox,
	}, nil
}
