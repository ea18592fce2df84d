// Package state keeps hlaunch's durable records: one JSON file per worker (and per execution in the
// ledger), each written atomically so a crash at any instant leaves every record parseable, in
// directories that are the launcher's alone (trust_linux.go); and it sweeps the temp files of writers
// that died before their rename (sweep_linux.go).
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Dir is one directory of records.
type Dir struct {
	Path string
}

// ErrNotFound is returned by Read for a record that does not exist.
var ErrNotFound = errors.New("record not found")

// ErrDamaged is returned by Read for a record whose damage is its own, not a failure of the moment: its
// bytes do not decode into the value asked for, or its name holds something other than a regular file (a
// directory, a symbolic link, a FIFO). Reading it again gives the same answer.
var ErrDamaged = errors.New("record damaged")

// Open makes sure dir exists (mode 0700) and is the launcher's alone (Check), and returns it.
func Open(dir string) (*Dir, error) {
	if err := Check(dir); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(dir); err == nil && st.IsDir() {
		return &Dir{Path: dir}, nil // it existed when Check looked: checked already
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	// Made now, or by someone who raced us to it: look again.
	if err := Check(dir); err != nil {
		return nil, err
	}
	return &Dir{Path: dir}, nil
}

// Write stores v as <name>.json: temp file, fsync, rename, fsync of the directory. With durable false the
// two fsyncs are skipped (records that need not survive a power loss, such as a foreground run's).
// The temp file (".<name>.tmp-*") is held locked from just after it is made until it has been renamed:
// the mark of a live writer that SweepTemps respects.
func (d *Dir) Write(name string, v any, durable bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record %s: %w", name, err)
	}
	f, err := os.CreateTemp(d.Path, "."+name+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	tmp := f.Name()
	renamed, closed := false, false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
		if !closed {
			f.Close()
		}
	}()
	if err := lockTemp(f); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write record: %w", err)
		}
	}
	if err := os.Rename(tmp, filepath.Join(d.Path, name+".json")); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	renamed = true
	closed = true // closing drops the lock, once the temp file's name is gone
	if err := f.Close(); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if durable {
		return syncDir(d.Path)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync state dir: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync state dir: %w", err)
	}
	return nil
}

// Read decodes <name>.json into v; ErrNotFound when it does not exist, ErrDamaged when it is not a regular
// file or does not decode.
func (d *Dir) Read(name string, v any) error {
	b, err := readNoFollow(filepath.Join(d.Path, name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("read record %s: %w: a symbolic link", name, ErrDamaged)
	}
	if err != nil {
		return fmt.Errorf("read record: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read record %s: %w: %w", filepath.Join(d.Path, name+".json"), ErrDamaged, err)
	}
	return nil
}

// Names lists the record names (without .json) that start with prefix, sorted. Temp files are skipped.
func (d *Dir) Names(prefix string) ([]string, error) {
	names, err := readNames(d.Path)
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") || !strings.HasPrefix(n, prefix) {
			continue
		}
		out = append(out, strings.TrimSuffix(n, ".json"))
	}
	slices.Sort(out)
	return out, nil
}

// Discard removes <name>.json and the temp files its writers left (a writer killed between its temp file
// and the rename leaves one, which Names never lists and nothing else removes): for the records of an
// operation that failed. Missing files are not an error.
func (d *Dir) Discard(name string) error {
	if ents, err := os.ReadDir(d.Path); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "."+name+tempInfix) {
				_ = os.Remove(filepath.Join(d.Path, e.Name()))
			}
		}
	}
	return d.Remove(name)
}

// Remove deletes <name>.json; a missing record is not an error.
func (d *Dir) Remove(name string) error {
	err := os.Remove(filepath.Join(d.Path, name+".json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove record: %w", err)
	}
	return nil
}

// readNoFollow reads a record, refusing a symbolic link in its place (ELOOP): a record is a file hlaunch
// renamed into place, never a link to somewhere else. Anything else that is not a regular file is
// ErrDamaged; O_NONBLOCK keeps the open of a FIFO in its place from waiting for a writer.
func readNoFollow(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is a %s, not a regular file", ErrDamaged, filepath.Base(p), kindOf(st.Mode()))
	}
	return io.ReadAll(f)
}

// kindOf names a file's type for a message.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
