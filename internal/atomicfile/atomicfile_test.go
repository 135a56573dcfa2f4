package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
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
