package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// LogPollInterval is how often a followed log is looked at again for new output and for its worker's end.
const LogPollInterval = 200 * time.Millisecond

// logRetries bounds how often a read looks again at a log whose rotation is in progress (its current
// file's inode not yet in the position record).
const logRetries = 50

// logSeg is one open file of a log and the offset of its first byte.
type logSeg struct {
	f    *os.File
	base int64
}

// ReadLog copies worker ref's log into w from offset (counted from the first byte the log held when the
// worker's shim opened it, across rotations; an offset before the oldest byte still held starts there).
// begin is called once, before anything is written, with that oldest offset. With follow it goes on
// copying what the worker writes until the worker has ended and its output is drained (its shim has
// recorded its end), or ctx ends. It reads only the launcher's own per-worker logs (<state-dir>/logs),
// opened without following a link.
func (l *Launcher) ReadLog(ctx context.Context, ref string, offset int64, follow bool, w io.Writer, begin func(start int64) error) error {
	rec, err := l.Get(ctx, ref)
	if err != nil {
		return err
	}
	switch {
	case rec.Log == "":
		return fmt.Errorf("%w: worker %s: its output is not logged (inherited stdio, or /dev/null)", worker.ErrNoLog, rec.ID)
	case filepath.Dir(rec.Log) != filepath.Join(l.StatePath, "logs"):
		return fmt.Errorf("%w: worker %s: its log %s is a file its caller named: read it there", worker.ErrNoLog, rec.ID, rec.Log)
	}
	begun := false
	for {
		ended := false
		if follow {
			now, err := l.Get(ctx, rec.ID)
			if err != nil {
				return err
			}
			// The shim writes ended_at after it has drained the worker's output into the log.
			ended = now.EndedAt != "" || now.State != fingerprint.Running && now.State != fingerprint.Exited
		}
		segs, err := l.openLog(ctx, rec.ID, rec.Log)
		if err != nil {
			return err
		}
		start := int64(0)
		if len(segs) > 0 {
			start = segs[0].base
		}
		if !begun {
			begun = true
			if err := begin(start); err != nil {
				closeSegs(segs)
				return err
			}
		}
		offset = max(offset, start)
		offset, err = copySegs(segs, offset, w)
		closeSegs(segs)
		if err != nil || !follow || ended {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(LogPollInterval):
		}
	}
}

// openLog opens the files of log (the current one and <log>.1) and places them by the worker's position
// record: a file whose inode the record does not name is mid-rotation, and is looked at again. Without a
// record (none written yet) the current file starts at 0 and the rotated one is not read. A missing file
// is no segment: a log not written yet is empty.
func (l *Launcher) openLog(ctx context.Context, id, log string) ([]logSeg, error) {
	for range logRetries {
		var pos records.LogPos
		err := (&state.Dir{Path: l.WorkersDir()}).Read(records.LogPosName(id), &pos)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return nil, err
		}
		havePos := err == nil
		var segs []logSeg
		retry := false
		for i, name := range []string{log, log + ".1"} {
			f, err := openNoFollow(name)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				closeSegs(segs)
				return nil, fmt.Errorf("log of %s: %w", id, err)
			}
			fi, err := f.Stat()
			if err != nil || !fi.Mode().IsRegular() {
				f.Close()
				closeSegs(segs)
				return nil, fmt.Errorf("log of %s: %s is not a regular file", id, name)
			}
			base, known := int64(0), !havePos && i == 0
			for _, p := range pos.Files {
				if p.Ino == records.InoOf(fi) {
					base, known = p.Base, true
				}
			}
			switch {
			case known:
				segs = append(segs, logSeg{f: f, base: base})
			case i == 0:
				retry = true
				f.Close()
			default:
				f.Close() // a rotated file from before this worker's shim: not part of its output
			}
		}
		if !retry {
			sort.Slice(segs, func(a, b int) bool { return segs[a].base < segs[b].base })
			return segs, nil
		}
		closeSegs(segs)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("log of %s: its files keep changing while they are opened", id)
}

// copySegs copies the segments' bytes from offset on into w and returns the offset after them.
func copySegs(segs []logSeg, offset int64, w io.Writer) (int64, error) {
	for i, s := range segs {
		end := int64(-1) // the current file: to its end now
		if i+1 < len(segs) {
			end = segs[i+1].base
		}
		if end >= 0 && offset >= end {
			continue
		}
		if offset < s.base {
			offset = s.base
		}
		r := io.Reader(io.NewSectionReader(s.f, offset-s.base, 1<<62))
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

func closeSegs(segs []logSeg) {
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
