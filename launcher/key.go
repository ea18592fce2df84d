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
// signalled, and it no longer blocks the key. A damaged record (Damaged) that names the key blocks it: with
// no identity to verify, it cannot be proven not to hold it; one that does not decode names no key and
// blocks none. The returned function drops the lock.
func (l *Launcher) holdKey(ctx context.Context, key string) (func(), error) {
	dir := l.keysDir()
	if _, err := state.Open(dir); err != nil {
		return nil, fmt.Errorf("key lock: %w", err)
	}
	sum := sha256.Sum256([]byte(key))
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("key lock: %w", err)
	}
	if err := flock(ctx, f); err != nil {
		f.Close()
		return nil, err
	}
	unlock := func() { f.Close() } // closing drops the flock
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
		if r.Key == key && Damaged(r.State) {
			unlock()
			return nil, fmt.Errorf("%w: --key %q is named by worker %s, whose record is %s (%s): it cannot be proven not to hold it", ErrKeyHeld, key, r.ID, r.State, r.RecordError)
		}
	}
	return unlock, nil
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
