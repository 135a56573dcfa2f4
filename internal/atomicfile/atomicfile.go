// Package atomicfile writes an output file so that a reader never sees it
// half written and a writer that does not finish never destroys the file
// that was there: everything goes to PATH.partial, which Commit syncs and
// renames over PATH. A process killed before Commit leaves PATH as it was
// and PATH.partial with what was written (and flushed) so far.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
)

// Suffix is appended to the path of the file being written.
const Suffix = ".partial"

// File is an output file being written. It is not safe for concurrent use.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create starts writing path: it creates (or truncates) path + Suffix. A
// path that names a directory is an error; path itself is not touched.
func Create(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	f, err := os.OpenFile(path+Suffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path}, nil
}

// Path is the file's final path.
func (f *File) Path() string { return f.path }

// Write writes to the partial file.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, os.ErrClosed
	}
	return f.f.Write(p)
}

// Sync commits what was written so far to stable storage (still under the
// partial name).
func (f *File) Sync() error {
	if f.done {
		return os.ErrClosed
	}
	return f.f.Sync()
}

// Commit syncs and closes the partial file and renames it over the final
// path. On error the partial file is removed and the final path left as it
// was. Commit after Commit or Abort does nothing.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	err := errors.Join(f.f.Sync(), f.f.Close())
	if err == nil {
		err = os.Rename(f.path+Suffix, f.path)
	}
	if err != nil {
		os.Remove(f.path + Suffix)
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

// Close is Commit: an io.Closer that finishes the file.
func (f *File) Close() error { return f.Commit() }

// Abort closes and removes the partial file, leaving the final path as it
// was. Abort after Commit or Abort does nothing.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	os.Remove(f.path + Suffix)
}

// Keep closes the partial file without putting it in place: the final path
// is left as it was and PATH.partial holds what was written (for a run that
// failed: its data, never mistaken for a complete output). Keep after
// Commit or Abort does nothing.
func (f *File) Keep() error {
	if f.done {
		return nil
	}
	f.done = true
	return errors.Join(f.f.Sync(), f.f.Close())
}
