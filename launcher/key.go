package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/fingerprint"
	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/state"
)

// holdKey takes the key's lock (so two launches with one key cannot race past the check) and refuses when
// a worker holding the key verifies as running. A holder that does not verify is released: it is never
// signalled, and it no longer blocks the key. The returned function drops the lock.
//
// The lock file goes with the lock: the returned function removes it before it lets go, so that a caller
// with a new key for every launch (a cron execution's) leaves no file behind; the record of the worker,
// written by then, is what holds the key afterwards. A launch that got the lock of a file removed
// meanwhile excludes nobody who opens the path afresh, so it locks what the path names now (lockKeyFile).
func (l *Launcher) holdKey(ctx context.Context, key string) (func(), error) {
	dir := l.keysDir()
	if _, err := state.Open(dir); err != nil {
		return nil, fmt.Errorf("key lock: %w", err)
	}
	sum := sha256.Sum256([]byte(key))
	path := filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock")
	f, err := lockKeyFile(ctx, path)
	if err != nil {
		return nil, err
	}
	unlock := func() {
		_ = os.Remove(path) // the path names this file: only the holder of its lock removes it
		f.Close()           // closing drops the flock
	}
	recs, err := l.List(ctx)
	if err != nil {
		unlock()
		return nil, err
	}
	for _, r := range recs {
		if r.Key == key && r.State == fingerprint.Running {
			unlock()
			return nil, fmt.Errorf("%w: --key %q is held by worker %s (pid %d)", ErrKeyHeld, key, r.ID, r.PID)
		}
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

// keysDir holds the key locks.
func (l *Launcher) keysDir() string { return filepath.Join(l.state, "keys") }
