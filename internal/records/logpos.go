package records

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/state"
	"golang.org/x/sys/unix"
)

// A detached worker's log is read back by offsets that count from the first byte its log held when its
// shim opened it, across rotations (LogReader). Which offset each file starts at is the shim's to say: it
// records the files by inode in the worker's position record (logpos-<id> in the state directory),
// synchronously, after it opens a new file and before it writes into it, so that a reader that finds a
// file's inode in the record knows where that file starts, and one that does not is looking at a file
// whose rotation is in progress (it looks again).

// LogPosName names a worker's position record: logpos-<id>. It does not start with the worker's id, so
// that nothing that counts or lists a worker's records by its id takes it for one.
func LogPosName(id string) string { return "logpos-" + id }

// LogPos is the position record: the log's current file first, then the rotated one (<log>.1), if any.
type LogPos struct {
	Files []LogFilePos `json:"files"`
}

// LogFilePos is one file of a log: its inode and the offset of its first byte in the worker's output.
type LogFilePos struct {
	Ino  uint64 `json:"ino"`
	Base int64  `json:"base"`
}

// InoOf is fi's inode number, 0 when fi has none.
func InoOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// LogPosWriter writes a worker's position record into its state directory (durably: a reader after a
// crash must not find a file's inode missing).
func LogPosWriter(workers, id string) func(LogPos) {
	return func(p LogPos) {
		if d, err := state.Open(workers); err == nil {
			_ = d.Write(LogPosName(id), p, true)
		}
	}
}

// logRetries bounds how often a read looks again at a log whose rotation is in progress (its current
// file's inode not yet in the position record).
const logRetries = 50

// LogSeg is one open file of a log and the offset of its first byte.
type LogSeg struct {
	f    *os.File
	Base int64
}

// OpenLog opens the files of log (the current one and <log>.1) and places them by the worker's position
// record: a file whose inode the record does not name is mid-rotation, and is looked at again. Without a
// record (none written yet) the current file starts at 0 and the rotated one is not read. A missing file
// is no segment: a log not written yet is empty.
func (l *Store) OpenLog(ctx context.Context, id, log string) ([]LogSeg, error) {
	for range logRetries {
		var pos LogPos
		err := (&state.Dir{Path: l.WorkersDir()}).Read(LogPosName(id), &pos)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return nil, err
		}
		havePos := err == nil
		var segs []LogSeg
		retry := false
		for i, name := range []string{log, log + ".1"} {
			f, err := openNoFollow(name)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				CloseSegs(segs)
				return nil, fmt.Errorf("log of %s: %w", id, err)
			}
			fi, err := f.Stat()
			if err != nil || !fi.Mode().IsRegular() {
				f.Close()
				CloseSegs(segs)
				return nil, fmt.Errorf("log of %s: %s is not a regular file", id, name)
			}
			base, known := int64(0), !havePos && i == 0
			for _, p := range pos.Files {
				if p.Ino == InoOf(fi) {
					base, known = p.Base, true
				}
			}
			switch {
			case known:
				segs = append(segs, LogSeg{f: f, Base: base})
			case i == 0:
				retry = true
				f.Close()
			default:
				f.Close() // a rotated file from before this worker's shim: not part of its output
			}
		}
		if !retry {
			slices.SortFunc(segs, func(a, b LogSeg) int { return cmp.Compare(a.Base, b.Base) })
			return segs, nil
		}
		CloseSegs(segs)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("log of %s: its files keep changing while they are opened", id)
}

// CopySegs copies the segments' bytes from offset on into w and returns the offset after them.
func CopySegs(segs []LogSeg, offset int64, w io.Writer) (int64, error) {
	for i, s := range segs {
		end := int64(-1) // the current file: to its end now
		if i+1 < len(segs) {
			end = segs[i+1].Base
		}
		if end >= 0 && offset >= end {
			continue
		}
		if offset < s.Base {
			offset = s.Base
		}
		r := io.Reader(io.NewSectionReader(s.f, offset-s.Base, 1<<62))
		if end >= 0 {
			r = io.LimitReader(r, end-offset)
		}
		n, err := io.Copy(w, r)
		offset += n
		if err != nil {
			return offset, err
		}
	}
	return offset, nil
}

// CloseSegs closes the segments' files.
func CloseSegs(segs []LogSeg) {
	for _, s := range segs {
		s.f.Close()
	}
}

// openNoFollow opens a log file for reading, refusing a symbolic link in its place.
func openNoFollow(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
