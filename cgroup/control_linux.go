package cgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/pidsignal"
)

// sleepBackoff sleeps a little longer on each attempt: 1ms, 2ms, 4ms ... capped at 50ms.
func sleepBackoff(i int) {
	d := time.Millisecond << min(i, 6)
	time.Sleep(min(d, 50*time.Millisecond))
}

// waitCtx sleeps like sleepBackoff but returns early with ctx's error.
func waitCtx(ctx context.Context, i int) error {
	d := min(time.Millisecond<<min(i, 6), 50*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Freeze stops every member: v2 cgroup.freeze (waiting until cgroup.events says "frozen 1"), or the v1
// freezer on a legacy host. Never call it from a process inside the group: it would freeze itself.
func (g *Group) Freeze(ctx context.Context) error { return g.setFrozen(ctx, true) }

// Thaw resumes the members after Freeze.
func (g *Group) Thaw(ctx context.Context) error { return g.setFrozen(ctx, false) }

func (g *Group) setFrozen(ctx context.Context, frozen bool) error {
	if g.v2 != "" {
		val := "0"
		if frozen {
			val = "1"
		}
		if err := writeFile(filepath.Join(g.v2, "cgroup.freeze"), val); err != nil {
			return err
		}
		for i := 0; ; i++ {
			ev, err := readEvents(g.v2)
			if err != nil {
				return err
			}
			if ev.Frozen == frozen {
				return nil
			}
			if err := waitCtx(ctx, i); err != nil {
				return fmt.Errorf("cgroup: waiting for frozen=%s in %s/cgroup.events: %w", val, g.v2, err)
			}
		}
	}
	d := g.v1["freezer"]
	if d == "" {
		return fmt.Errorf("cgroup: %s has no freezer: %w", g.path, ErrNotFound)
	}
	state := "THAWED"
	if frozen {
		state = "FROZEN"
	}
	f := filepath.Join(d, "freezer.state")
	for i := 0; ; i++ {
		// The v1 freezer can stay in FREEZING while a task is in an uninterruptible sleep; writing the
		// state again retries the freeze (runc does the same).
		if err := writeFile(f, state); err != nil {
			return err
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) == state {
			return nil
		}
		if err := waitCtx(ctx, i); err != nil {
			return fmt.Errorf("cgroup: waiting for %s in %s: %w", state, f, err)
		}
	}
}

// thawCtx gives a thaw its own short deadline: a group must not stay frozen because the caller's context
// ended between freeze and thaw.
func thawCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// Signal delivers sig to every member except the PIDs in skip (and the caller). The group is frozen while
// its members are listed and signalled, so a member cannot fork a child that misses the signal, then
// thawed. If the calling process is itself a member (a shim inside the group), the group is not frozen,
// since that would stop the caller. Every member is signalled through a pidfd pinned between two listings
// (internal/pidsignal), never by a PID number read from cgroup.procs.
func (g *Group) Signal(ctx context.Context, sig syscall.Signal, skip ...int) error {
	procs, err := g.Procs()
	if err != nil {
		return err
	}
	self := slices.Contains(procs, os.Getpid())
	if !self {
		if err := g.Freeze(ctx); err != nil {
			return err
		}
		defer func() {
			tctx, cancel := thawCtx()
			defer cancel()
			_ = g.Thaw(tctx)
		}()
		if procs, err = g.Procs(); err != nil {
			return err
		}
	}
	// Pinned (internal/pidsignal): a listed PID that exits and is reused before the signal is never hit.
	done := map[int]bool{os.Getpid(): true}
	for _, p := range skip {
		done[p] = true
	}
	_, err = pidsignal.Members(g.Procs, sig, done)
	return err
}

// Kill ends every member and returns nil only once the group is verified empty (v2 populated 0 and no
// member in any v1 directory). It writes cgroup.kill where the kernel has it (5.14+); otherwise, unless
// Host.NoKillFallback forbids it, it freezes, SIGKILLs every member and thaws, repeating until empty, and
// says so once per Host through Host.Logf.
func (g *Group) Kill(ctx context.Context) error {
	if g.v2 != "" {
		err := writeFile(filepath.Join(g.v2, "cgroup.kill"), "1")
		if err == nil {
			return g.waitEmpty(ctx, true)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if g.host.NoKillFallback {
		return fmt.Errorf("%w: %s", ErrFallbackForbidden, g.path)
	}
	if g.host.fallbackSaid.CompareAndSwap(false, true) && g.host.Logf != nil {
		g.host.Logf("cgroup: no cgroup.kill on this host; killing by freeze, SIGKILL, thaw")
	}
	for i := 0; ; i++ {
		pop, err := g.Populated()
		if err != nil {
			return err
		}
		if !pop {
			return nil
		}
		if err := g.Signal(ctx, unix.SIGKILL); err != nil {
			return err
		}
		if err := waitCtx(ctx, i); err != nil {
			return fmt.Errorf("cgroup: killing %s: %w", g.path, err)
		}
	}
}

// WaitEmpty blocks until the group is verified empty or ctx ends. On a v2 tree it sleeps in poll(2) on
// cgroup.events itself (kernfs wakes pollers with POLLPRI when "populated" changes) with a short timeout
// as a backstop; on a legacy host it polls.
func (g *Group) WaitEmpty(ctx context.Context) error { return g.waitEmpty(ctx, false) }

// waitEmpty with killV1 also SIGKILLs members found only in v1 directories: cgroup.kill reaches the v2
// members, and a process moved out of the v2 group by someone else would otherwise hold Kill forever.
//
// It used to sleep on inotify. Closing an inotify instance waits for an SRCU grace period, measured at
// 7-14 ms on these machines on every foreground launch (make bench, docs/benchmarks.md); a kernfs file
// descriptor is armed by reading it and costs nothing to close. The group is checked before anything is
// opened, since a foreground worker's group is almost always empty already when its leader has exited.
func (g *Group) waitEmpty(ctx context.Context, killV1 bool) error {
	efd := -1
	defer func() {
		if efd >= 0 {
			unix.Close(efd)
		}
	}()
	var buf [512]byte
	for i := 0; ; i++ {
		if efd >= 0 {
			// Reading arms the descriptor: a change after this read wakes the poll below.
			_, _ = unix.Pread(efd, buf[:], 0)
		}
		pop, err := g.Populated()
		if err != nil {
			return err
		}
		if !pop {
			return nil
		}
		if killV1 && i > 0 {
			g.killV1Members()
		}
		if efd < 0 && g.v2 != "" && i == 0 {
			if fd, err := unix.Open(filepath.Join(g.v2, "cgroup.events"), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				efd = fd
				continue // arm it and look again before sleeping
			}
		}
		if efd < 0 {
			if err := waitCtx(ctx, i); err != nil {
				return fmt.Errorf("cgroup: waiting for %s to empty: %w", g.path, err)
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cgroup: waiting for %s to empty: %w", g.path, err)
		}
		if _, err := linux.Poll([]unix.PollFd{{Fd: int32(efd), Events: unix.POLLPRI}}, 20); err != nil {
			return err
		}
	}
}

// killV1Members SIGKILLs PIDs listed in the group's v1 directories (or below them) but not in its v2
// directory.
func (g *Group) killV1Members() {
	if len(g.v1dirs) == 0 {
		return
	}
	_, _ = pidsignal.Members(func() ([]int, error) {
		var out []int
		for _, d := range g.v1dirs {
			pids, _ := subtreePids(d)
			out = append(out, pids...)
		}
		return out, nil
	}, unix.SIGKILL, map[int]bool{os.Getpid(): true})
}
