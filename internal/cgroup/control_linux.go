package cgroup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// Signal delivers sig to every member except the PIDs in skip (and the caller), through the one
// whole-cgroup signal path (internal/pidsignal.Tree) without a worker lock (a Group is the launcher's own,
// for a worker no other process addresses: a foreground one, or one being removed): the group is frozen
// (v2 cgroup.freeze, or the v1 freezer on a legacy host) while its members are signalled, in passes until a
// pass finds no one new, then thawed. If the calling process is itself a member, the group is not frozen,
// since that would stop the caller. Every member is signalled through a pidfd pinned between two listings,
// never by a PID number read from cgroup.procs. SIGKILL without skip writes cgroup.kill where the kernel
// has it; else (unless Host.NoKillFallback forbids it) it is the freeze, SIGKILL, thaw, said once per Host
// through Host.Logf.
func (g *Group) Signal(ctx context.Context, sig syscall.Signal, skip ...int) error {
	dir := g.primary
	if dir == "" {
		return fmt.Errorf("cgroup: %s has no directory: %w", g.path, ErrNotFound)
	}
	fd, err := linux.Retry(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	t := pidsignal.Tree{Dir: fd, List: g.Procs, Skip: skip, NoKill: g.killFallback}
	return t.Signal(ctx, sig)
}

// killFallback decides the freeze-kill-thaw that replaces a missing cgroup.kill: refused under
// Host.NoKillFallback, else said once per Host.
func (g *Group) killFallback() error {
	if g.host.NoKillFallback {
		return fmt.Errorf("%w: %s", ErrFallbackForbidden, g.path)
	}
	if g.host.fallbackSaid.CompareAndSwap(false, true) && g.host.Logf != nil {
		g.host.Logf("cgroup: no cgroup.kill on this host; killing by freeze, SIGKILL, thaw")
	}
	return nil
}

// Kill ends every member and returns nil only once the group is verified empty (v2 populated 0 and no
// member in any v1 directory or below it). It writes cgroup.kill where the kernel has it (5.14+);
// otherwise, unless Host.NoKillFallback forbids it, it freezes, SIGKILLs every member and thaws (Signal),
// and says so once per Host through Host.Logf.
func (g *Group) Kill(ctx context.Context) error {
	if err := g.Signal(ctx, unix.SIGKILL); err != nil {
		return err
	}
	return g.waitEmpty(ctx, true)
}

// WaitEmpty blocks until the group is verified empty or ctx ends. On a v2 tree it sleeps in poll(2) on
// cgroup.events itself (kernfs wakes pollers with POLLPRI when "populated" changes) with a short timeout
// as a backstop; on a legacy host it polls.
func (g *Group) WaitEmpty(ctx context.Context) error { return g.waitEmpty(ctx, false) }

// waitEmpty with killV1 also SIGKILLs members found only in v1 directories: cgroup.kill reaches the v2
// members, and a process moved out of the v2 group by someone else would otherwise hold Kill forever.
//
// It polls a kernfs descriptor, armed by reading it, rather than inotify: closing an inotify instance
// waits for an SRCU grace period on every foreground launch (ADR 0006). The group is checked before
// anything is opened, since a foreground worker's group is almost always empty already when its leader has
// exited.
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
