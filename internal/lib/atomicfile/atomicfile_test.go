package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCommitReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old report" {
		t.Fatalf("before Commit the old file reads %q", b)
	}
	if b, _ := os.ReadFile(path + Suffix); string(b) != "new" {
		t.Fatalf("the partial file reads %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("after Commit %q", b)
	}
	if _, err := os.Stat(path + Suffix); !os.IsNotExist(err) {
		t.Errorf("the partial file is still there: %v", err)
	}
}

func TestAbortKeepsTheOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	if b, _ := os.ReadFile(path); string(b) != "old report" {
		t.Fatalf("after Abort %q", b)
	}
	if _, err := os.Stat(path + Suffix); !os.IsNotExist(err) {
		t.Errorf("the partial file is still there: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Errorf("Commit after Abort: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old report" {
		t.Fatalf("Commit after Abort wrote %q", b)
	}
}

func TestCreateRefusesADirectory(t *testing.T) {
	if _, err := Create(t.TempDir()); err == nil {
		t.Fatal("a directory was accepted")
	}
}

// TestSymlinkIsFollowed: a symbolic link at the path stays a link; the
// file it names (here through a relative link, and a dangling one) gets
// the new content.
func TestSymlinkIsFollowed(t *testing.T) {
	dir := t.TempDir()
	for _, existing := range []bool{true, false} {
		target := filepath.Join(dir, "real.json")
		os.Remove(target)
		if existing {
			os.WriteFile(target, []byte("old"), 0o644)
		}
		link := filepath.Join(dir, "link.json")
		os.Remove(link)
		if err := os.Symlink("real.json", link); err != nil {
			t.Fatal(err)
		}
		f, err := Create(link)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("new"))
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("existing %v: the link was replaced (%v, %v)", existing, fi.Mode(), err)
		}
		if b, _ := os.ReadFile(target); string(b) != "new" {
			t.Errorf("existing %v: the link's target reads %q", existing, b)
		}
	}
}

// TestDeviceIsWrittenInPlace: /dev/null is written, not replaced by a
// regular file (as root, a rename over it would replace the machine's).
func TestDeviceIsWrittenInPlace(t *testing.T) {
	f, err := Create("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("report")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is now %v (%v)", fi.Mode(), err)
	}
	if _, err := os.Stat("/dev/null" + Suffix); !os.IsNotExist(err) {
		t.Errorf("/dev/null%s exists: %v", Suffix, err)
	}
}

// TestDeviceWriteErrorReported: /dev/full's ENOSPC is Commit's error.
func TestDeviceWriteErrorReported(t *testing.T) {
	f, err := Create("/dev/full")
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	f.Write([]byte("report"))
	if err := f.Commit(); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Commit = %v, want ENOSPC", err)
	}
	if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is now %v (%v)", fi.Mode(), err)
	}
}

// TestFIFOReaderGetsTheData: a named pipe is written in place; its reader
// gets the bytes and EOF at Commit, whether it opened before or after
// Create.
func TestFIFOReaderGetsTheData(t *testing.T) {
	for _, readerFirst := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "pipe")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
		got := make(chan string, 1)
		read := func() {
			b, _ := os.ReadFile(path)
			got <- string(b)
		}
		if readerFirst {
			go read()
			time.Sleep(50 * time.Millisecond)
		}
		f, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if !readerFirst {
			go read()
		}
		if _, err := f.Write([]byte("report")); err != nil {
			t.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			if s != "report" {
				t.Errorf("reader first %v: read %q", readerFirst, s)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reader first %v: the reader got no EOF", readerFirst)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
		}
	}
}

// TestFailedWriteKeepsTheOldFile: a write that failed (ENOSPC, from
// /dev/full behind the partial name) is never renamed over the earlier
// file; Commit says where what was written is kept.
func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ops.csv")
	os.WriteFile(path, []byte("old,complete\n"), 0o644)
	if err := os.Symlink("/dev/full", path+Suffix); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Skip("cannot open /dev/full:", err)
	}
	if _, err := f.Write([]byte("new,cut mid-rec")); err == nil {
		t.Fatal("a write to /dev/full succeeded")
	}
	err = f.Commit()
	if err == nil || !strings.Contains(err.Error(), "kept in "+path+Suffix) {
		t.Errorf("Commit = %v, want the failure and where the data is kept", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old,complete\n" {
		t.Errorf("the earlier file now reads %q", b)
	}
}

// TestCheckLeavesAFIFOAlone: checking a named pipe up front (as run does
// for --results) does not open it, so its reader does not take that for
// the end of the data; a directory fails the check.
func TestCheckLeavesAFIFOAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(path)
		got <- string(b)
	}()
	time.Sleep(50 * time.Millisecond)
	if err := Check(path); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		t.Fatalf("the reader got EOF (%q) from Check", s)
	case <-time.After(100 * time.Millisecond):
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("data"))
	f.Commit()
	if s := <-got; s != "data" {
		t.Errorf("the reader got %q", s)
	}
	if err := Check(dir); err == nil {
		t.Error("Check of a directory passed")
	}
}
