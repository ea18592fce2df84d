package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// holdKey takes the key's lock (so two launches with one key cannot race past the check) and refuses when
// a worker holding the key verifies as running. A holder that does not verify is released: it is never
// signalled, and it no longer blocks the key. A damaged record (Damaged) that names the key blocks it: with
// no identity to verify, it cannot be proven not to hold it; one that does not decode names no key and
// blocks none. The key's holder is found through its index entry (one record read and verified) and
// rebuilt from every record when the entry is missing, damaged or names a record that does not carry the
// key. Before it returns, the entry names id, the worker about to start: written before that worker's
// record, so no record with the key is ever newer than the entry (a launch that fails leaves an entry
// naming no record, which the next launch rebuilds). The returned function drops the lock.
//
// The lock file goes with the lock: the returned function removes it before it lets go, so that a caller
// with a new key for every launch (a cron execution's) leaves no lock file behind. A launch that got the
// lock of a file removed meanwhile excludes nobody who opens the path afresh, so it locks what the path
// names now (lockKeyFile).
func (l *Launcher) holdKey(ctx context.Context, key, id string) (func(), error) {
	dir := l.KeysDir()
	if _, err := state.Open(dir); err != nil {
		return nil, fmt.Errorf("key lock: %w", err)
	}
	path := filepath.Join(dir, records.IndexName(key)+".lock")
	f, err := lockKeyFile(ctx, path)
	if err != nil {
		return nil, err
	}
	unlock := func() {
		_ = os.Remove(path) // the path names this file: only the holder of its lock removes it
		f.Close()           // closing drops the flock
	}
	if err := l.keyFree(ctx, key); err != nil {
		unlock()
		return nil, err
	}
	if err := (&state.Dir{Path: dir}).Write(records.HolderName(key), records.IndexEntry{Key: key, ID: id}, true); err != nil {
		unlock()
		return nil, fmt.Errorf("key index: %w", err)
	}
	return unlock, nil
}

// lockKeyFile opens (creating it) and locks the key lock file at path, again until the file it locked is
// still the one the path names.
func lockKeyFile(ctx context.Context, path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("key lock: %w", err)
		}
		if err := flock(ctx, f); err != nil {
			f.Close()
			return nil, err
		}
		var held, named unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &held); err != nil {
			f.Close()
			return nil, fmt.Errorf("key lock: %w", os.NewSyscallError("fstat", err))
		}
		err = unix.Lstat(path, &named)
		if err == nil && named.Dev == held.Dev && named.Ino == held.Ino {
			return f, nil
		}
		f.Close()
		if err != nil && err != unix.ENOENT {
			return nil, fmt.Errorf("key lock: %w", &os.PathError{Op: "lstat", Path: path, Err: err})
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// keyFree returns ErrKeyHeld when a worker holding key verifies as running; the key's lock is held.
func (l *Launcher) keyFree(ctx context.Context, key string) error {
	var e records.IndexEntry
	if err := (&state.Dir{Path: l.KeysDir()}).Read(records.HolderName(key), &e); err == nil && e.Key == key && worker.IsID(e.ID) {
		rc, err := l.ReadRecord(e.ID)
		if err == nil && rc.Key == key {
			if _, err := records.CheckRecord(e.ID, rc, nil); err == nil {
				return l.keyHolderRuns(ctx, l.Src, rc)
			}
		}
	}
	// No entry, a damaged one, or one naming a record that does not carry the key: every record is read.
	recs, err := l.List(ctx)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Key == key && r.State == fingerprint.Running {
			_ = (&state.Dir{Path: l.KeysDir()}).Write(records.HolderName(key), records.IndexEntry{Key: key, ID: r.ID}, true)
			return fmt.Errorf("%w: --key %q is held by worker %s (pid %d)", worker.ErrKeyHeld, key, r.ID, r.PID)
		}
		if r.Key == key && worker.Damaged(r.State) {
			return fmt.Errorf("%w: --key %q is named by worker %s, whose record is %s (%s): it cannot be proven not to hold it", worker.ErrKeyHeld, key, r.ID, r.State, r.RecordError)
		}
	}
	return nil
}

// keyHolderRuns verifies the key's holder rc now: ErrKeyHeld when it runs.
func (l *Launcher) keyHolderRuns(ctx context.Context, src fingerprint.Sources, rc worker.Receipt) error {
	ident, err := fingerprint.ParseToken(rc.Token)
	if err != nil {
		return nil // a record without a valid token verifies as nothing: it holds no key (as List skips it)
	}
	r, err := l.reconciled(ctx, src, rc, ident)
	if err != nil {
		return err
	}
	if r.State == fingerprint.Running {
		return fmt.Errorf("%w: --key %q is held by worker %s (pid %d)", worker.ErrKeyHeld, r.Key, r.ID, r.PID)
	}
	return nil
}

// flock takes an exclusive lock on f, giving up when ctx ends.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := linux.RetryErr(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK {
			return os.NewSyscallError("flock", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeAfter():
		}
	}
}

func timeAfter() <-chan time.Time { return time.After(5 * time.Millisecond) }
