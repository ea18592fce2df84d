package pidsignal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// ErrUnsettled is returned by Tree.Signal when new members kept appearing for every pass it is allowed
// (an unfrozen group that forks faster than it is swept): every member it listed twice got the signal,
// but not every member can be said to have.
var ErrUnsettled = errors.New("pidsignal: new members kept appearing")

// maxPasses bounds the passes of one Tree.Signal. A frozen group settles in two (the second finds no one
// new); an unfrozen one (the caller is a member, or the freeze did not complete) gets the rest.
const maxPasses = 32

// freezeWait bounds the wait for a freeze to complete: a member in uninterruptible sleep holds a freeze
// off until it wakes. After it the signal is sent unfrozen, in repeated passes, and the group is thawed.
const freezeWait = 5 * time.Second

// lockWait bounds the wait for the worker's lock.
const lockWait = 10 * time.Second

// thawWait is the thaw's own deadline: a group must not stay frozen because the caller's context ended
// between freeze and thaw.
const thawWait = 5 * time.Second

// Tree is the one way hlaunch signals a whole cgroup (a worker's tree): fingerprint.Handle.SignalAll and
// cgroup.Group.Signal and Kill are this. Signal takes the worker's lock (Lock), freezes the group,
// signals every member through pinned pidfds (Members) in passes until a pass finds no one new, and
// thaws; SIGKILL writes cgroup.kill instead, where the kernel has it. A process that is itself a member
// (a worker's shim) never freezes the group (it would stop itself) and is never signalled by it.
type Tree struct {
	// Dir is the cgroup's directory fd: cgroup.kill, cgroup.freeze (v2) or freezer.state (a v1 freezer
	// directory) are written through it, so they reach the cgroup it was opened on and no other.
	Dir int
	// List returns the members of the cgroup and its descendants (in every hierarchy the caller tracks).
	List func() ([]int, error)
	// Skip lists PIDs that get nothing (a sandbox's forwarding init); with Skip, SIGKILL does not use
	// cgroup.kill.
	Skip []int
	// Lock is the path of the worker's lock file, flock'ed exclusively from before the freeze until after
	// the thaw, so that two signallers in separate processes (the CLI, the sidecar, the shim) neither thaw
	// each other's freeze nor interleave their passes. "" takes no lock (a group nobody else can reach).
	// The wait for it is bounded (lockWait); past that the signal goes out without it.
	Lock string
	// NoKill is called once when SIGKILL is meant and the cgroup has no cgroup.kill (v1, or a kernel before
	// 5.14), before the freeze-kill-thaw that replaces it; an error from it stops there. Nil allows it.
	NoKill func() error
}

// Signal delivers sig to every member of the tree but the caller and Skip. It returns nil once every
// member was signalled (or, for SIGKILL with cgroup.kill, once the kernel took the kill); ErrUnsettled
// when members kept appearing in every pass.
func (t Tree) Signal(ctx context.Context, sig syscall.Signal) (err error) {
	if t.Lock != "" {
		// Bounded: a holder that never lets go (a worker of the launcher's own uid can open the file) must
		// not hold a stop off. Past lockWait the passes run without it, as they would unfrozen.
		lctx, cancel := context.WithTimeout(ctx, lockWait)
		unlock, err := LockFile(lctx, t.Lock)
		cancel()
		switch {
		case err == nil:
			defer unlock()
		case ctx.Err() != nil:
			return err
		}
	}
	self := os.Getpid()
	pids, err := t.List()
	if err != nil {
		return err
	}
	member := slices.Contains(pids, self)
	if sig == unix.SIGKILL && !member && len(t.Skip) == 0 {
		err := writeAt(t.Dir, "cgroup.kill", "1")
		if errors.Is(err, unix.ENODEV) {
			return nil // removed under us: rmdir succeeds only on an empty cgroup
		}
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
		if t.NoKill != nil {
			if err := t.NoKill(); err != nil {
				return err
			}
		}
	}
	if !member {
		thaw, _, err := freeze(ctx, t.Dir)
		if err != nil {
			return err
		}
		// Thaw even when a pass failed: a worker must not be left frozen by us.
		defer func() {
			// A cgroup removed meanwhile (its last member ended, and it was collected) is not frozen.
			terr := thaw()
			if terr != nil && err == nil && !errors.Is(terr, unix.ENOENT) && !errors.Is(terr, unix.ENODEV) {
				err = terr
			}
		}()
	}
	done := map[int]bool{self: true}
	for _, p := range t.Skip {
		done[p] = true
	}
	for pass := 0; pass < maxPasses; pass++ {
		n, err := Members(t.List, sig, done)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // frozen, the second pass: frozen members cannot fork
		}
	}
	return fmt.Errorf("%w: %d passes", ErrUnsettled, maxPasses)
}

// freeze freezes the cgroup dir refers to, through cgroup.freeze (v2) or freezer.state (a v1 freezer
// directory), and waits up to freezeWait for the freeze to complete. It returns the thaw, and whether the
// group is frozen now; a cgroup with neither file (a v1 directory of another controller) is not frozen,
// and its thaw does nothing.
func freeze(ctx context.Context, dir int) (thaw func() error, frozen bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, freezeWait)
	defer cancel()
	none := func() error { return nil }
	switch err := writeAt(dir, "cgroup.freeze", "1"); {
	case errors.Is(err, unix.ENODEV):
		return none, false, nil // removed under us: nothing to freeze
	case err == nil:
		thaw = func() error { return writeAt(dir, "cgroup.freeze", "0") }
		return thaw, waitFile(wctx, dir, "cgroup.events", func(b []byte) bool {
			v, _ := linux.KeyedValue(b, "frozen")
			return v == "1"
		}, nil) == nil, nil
	case !errors.Is(err, unix.ENOENT):
		return nil, false, err
	}
	switch err := writeAt(dir, "freezer.state", "FROZEN"); {
	case err == nil:
		thaw = func() error {
			tctx, cancel := context.WithTimeout(context.Background(), thawWait)
			defer cancel()
			again := func() { _ = writeAt(dir, "freezer.state", "THAWED") }
			again()
			return waitFile(tctx, dir, "freezer.state", func(b []byte) bool {
				return strings.TrimSpace(string(b)) == "THAWED"
			}, again)
		}
		// The v1 freezer can stay FREEZING while a task sleeps uninterruptibly; writing the state again
		// retries the freeze (runc does the same).
		return thaw, waitFile(wctx, dir, "freezer.state", func(b []byte) bool {
			return strings.TrimSpace(string(b)) == "FROZEN"
		}, func() { _ = writeAt(dir, "freezer.state", "FROZEN") }) == nil, nil
	case !errors.Is(err, unix.ENOENT):
		return nil, false, err
	}
	return none, false, nil
}

// waitFile waits until ok holds for the contents of the cgroup file name, polling it (POLLPRI wakes a
// poller of cgroup.events when it changes; the short timeout is the backstop and paces retry).
func waitFile(ctx context.Context, dir int, name string, ok func([]byte) bool, retry func()) error {
	fd, err := openAt(dir, name, unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := make([]byte, 512)
	for {
		n, err := linux.Retry(func() (int, error) { return unix.Pread(fd, buf, 0) })
		if err != nil {
			return &os.PathError{Op: "pread", Path: name, Err: err}
		}
		if ok(buf[:n]) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting on %s: %w", name, err)
		}
		if _, err := linux.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}, 20); err != nil {
			return err
		}
		if retry != nil {
			retry()
		}
	}
}

// LockFile takes an exclusive flock on path (created 0600 if missing, never through a symbolic link),
// waiting until ctx ends. The returned function releases it.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	fd, err := linux.Retry(func() (int, error) {
		return unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	})
	if err != nil {
		return nil, fmt.Errorf("worker lock: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	for i := 0; ; i++ {
		err := linux.RetryErr(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
		if err == nil {
			return func() { _ = unix.Close(fd) }, nil // closing drops the flock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("worker lock: %w", &os.PathError{Op: "flock", Path: path, Err: err})
		}
		t := time.NewTimer(min(time.Millisecond<<min(i, 5), 20*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			_ = unix.Close(fd)
			return nil, fmt.Errorf("worker lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
}

func openAt(dir int, name string, flags int) (int, error) {
	fd, err := linux.Retry(func() (int, error) {
		return unix.Openat(dir, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	})
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}

// writeAt writes a cgroup control file relative to dir in one write(2).
func writeAt(dir int, name, value string) error {
	fd, err := openAt(dir, name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := linux.Retry(func() (int, error) { return unix.Write(fd, []byte(value)) }); err != nil {
		return &os.PathError{Op: "write", Path: name, Err: err}
	}
	return nil
}
