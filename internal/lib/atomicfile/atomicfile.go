// Package atomicfile writes an output file so that a reader never sees it
// half written and a writer that does not finish never destroys the file
// that was there: everything goes to PATH.partial, which Commit syncs and
// renames over PATH. A process killed before Commit leaves PATH as it was
// and PATH.partial with what was written (and flushed) so far.
//
// What PATH is decides how it is written:
//   - a regular file, or nothing: as above;
//   - a symbolic link: the file it names, as above (the link stays a link);
//   - a device, FIFO or socket (/dev/null, /dev/stdout, a named pipe): written
//     directly, never renamed over: a device is not a file to replace, and
//     a reader on a FIFO waits for the data, not for a rename;
//   - a directory: an error at Create.
//
// A write that failed (disk full) makes the file unfit to replace anything:
// Commit then keeps PATH.partial, leaves PATH as it was, and says so.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Suffix is appended to the path of the file being written.
const Suffix = ".partial"

// File is an output file being written. It is not safe for concurrent use.
type File struct {
	f      *os.File // nil: a FIFO with no reader yet, opened at the first write
	path   string   // the path given
	target string   // the file written: path, or what its symlinks name
	direct bool     // target is a device, FIFO or socket, written in place
	werr   error    // the first write error
	done   bool
}

// Create starts writing path: it creates (or truncates) target + Suffix,
// where target is path or the file its symbolic links name; a device,
// FIFO or socket is opened as it is instead (see the package comment). A
// path that names a directory is an error; path itself is not touched.
func Create(path string) (*File, error) {
	target, err := resolve(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return nil, fmt.Errorf("%s is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return openDirect(path, target, fi.Mode())
	}
	f, err := os.OpenFile(target+Suffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path, target: target}, nil
}

// Check tells whether Create(path) would succeed, without opening a
// device, FIFO or socket (a FIFO's reader would take the open and close as
// the end of its data): a directory is an error, a regular path is tried
// by creating and removing its partial file.
func Check(path string) error {
	target, err := resolve(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return nil
	}
	f, err := os.OpenFile(target+Suffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(target + Suffix)
}

// resolve follows path's symbolic links, a dangling last one included (the
// file it names is created).
func resolve(path string) (string, error) {
	for range 40 { // as the kernel's ELOOP limit
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// openDirect opens a device, FIFO or socket for writing in place. A FIFO
// without a reader would block the open: it is opened at the first write.
func openDirect(path, target string, mode fs.FileMode) (*File, error) {
	f := &File{path: path, target: target, direct: true}
	if mode&fs.ModeNamedPipe != 0 {
		// Kept open as it is: closing it to reopen would give a reader
		// that is already there its EOF. Go's poller makes the writes
		// wait for a slow reader all the same.
		pf, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			if errors.Is(err, syscall.ENXIO) {
				return f, nil // no reader yet: opened at the first write
			}
			return nil, err
		}
		f.f = pf
		return f, nil
	}
	of, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	f.f = of
	return f, nil
}

// Path is the file's final path, as given.
func (f *File) Path() string { return f.path }

// Write writes to the partial file (or in place, for a device, FIFO or
// socket). The first error is kept: Commit will not put the file in place.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, os.ErrClosed
	}
	if f.werr != nil {
		return 0, f.werr
	}
	if f.f == nil {
		of, err := os.OpenFile(f.target, os.O_WRONLY, 0)
		if err != nil {
			f.werr = err
			return 0, err
		}
		f.f = of
	}
	n, err := f.f.Write(p)
	if err != nil {
		f.werr = err
	}
	return n, err
}

// Sync commits what was written so far to stable storage (still under the
// partial name).
func (f *File) Sync() error {
	if f.done {
		return os.ErrClosed
	}
	return f.sync()
}

// sync syncs what can be: a device or pipe that cannot (EINVAL) is not an
// error, and a FIFO never opened has nothing to sync.
func (f *File) sync() error {
	if f.f == nil {
		return nil
	}
	if err := f.f.Sync(); err != nil && !(f.direct && errors.Is(err, syscall.EINVAL)) {
		return err
	}
	return nil
}

// close syncs and closes the file, if it was opened.
func (f *File) close() error {
	if f.f == nil {
		return nil
	}
	return errors.Join(f.sync(), f.f.Close())
}

// Commit syncs and closes the partial file and renames it over the final
// path; a device, FIFO or socket is only closed. After a failed write, or
// when the sync fails, the partial file is kept and the final path left as
// it was: the error names both. Commit after Commit or Abort does nothing.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	err := f.close()
	if f.direct {
		if err = errors.Join(f.werr, err); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		return nil
	}
	if err = errors.Join(f.werr, err); err != nil {
		return fmt.Errorf("%s: %w (what was written is kept in %s; %s is unchanged)", f.path, err, f.target+Suffix, f.path)
	}
	if err := os.Rename(f.target+Suffix, f.target); err != nil {
		os.Remove(f.target + Suffix)
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
	if f.f != nil {
		f.f.Close()
	}
	if !f.direct {
		os.Remove(f.target + Suffix)
	}
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
	return errors.Join(f.werr, f.close())
}
