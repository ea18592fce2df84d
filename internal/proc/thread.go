package proc

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCgroups places a child by the thread that forks it: a child starts in the cgroups of its forking
// thread, and cgroup v1 moves one thread alone. cgroup.Group implements it for its v1 directories; the v2
// directory is clone3's (CLONE_INTO_CGROUP).
type ThreadCgroups interface {
	// EnterThread moves the calling thread into the child's cgroups; on an error it has left them again.
	EnterThread() error
	// LeaveThread moves the calling thread out of them again, once the child is forked.
	LeaveThread() error
}

// ErrNotPlaced says that a child with Command.Cgroups could not be started in them: its forking thread
// could not join them (nothing was started) or leave them again (the child was killed and reaped).
var ErrNotPlaced = errors.New("the child could not be started in its cgroups")

// spawnOnThread is Spawn for a child that needs a forking thread of its own: one that drops to another
// uid forks from a thread whose session keyring is a fresh one, and one with c.Cgroups forks from a thread
// that joined those cgroups for the fork. The thread is locked to its goroutine and never unlocked, so no
// other goroutine ever runs on it with that keyring or in those cgroups, and the runtime ends it with its
// goroutine; while it is locked the runtime starts new threads from its template thread, never from it.
// A child with a parent-death signal keeps the thread, parked, until it is reaped, because that signal
// comes at the forking thread's death, not the process's; any other child lets it end at once.
func spawnOnThread(c Command) (*Proc, error) {
	// Our own thread is held while we wait, so the forking thread is another.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return forkOnOtherThread(c, true)
}

// forkOnOtherThread runs forkOnThisThread on a new goroutine locked to its thread, never the main thread:
// the runtime does not end the main thread when a goroutine locked to it exits, it parks it for good,
// which would keep it in the cgroups it left the child's for. A goroutine that lands on the main thread
// (avoidMain) keeps it held and forks from yet another.
//
// A thread that forked from inside c.Cgroups waits in their parent directories (LeaveThread) until it
// ends, so it is awaited: before this returns, or, when parked for the child, before the child's Wait
// returns. Nothing of ours is then left in a cgroup the caller may remove, or kill, after the child.
func forkOnOtherThread(c Command, avoidMain bool) (*Proc, error) {
	type started struct {
		p   *Proc
		err error
		tid int // the forking thread, which ends once it has sent this (parked: once the child is reaped)
	}
	ch := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked but on the main thread: the thread ends with this goroutine
		tid := unix.Gettid()
		if avoidMain && tid == unix.Getpid() {
			p, err := forkOnOtherThread(c, false)
			runtime.UnlockOSThread() // nothing was changed on this thread
			ch <- started{p: p, err: err}
			return
		}
		p, err := forkOnThisThread(c)
		if err != nil || c.Sys == nil || c.Sys.Pdeathsig == 0 {
			ch <- started{p: p, err: err, tid: tid}
			return
		}
		p.reapedCh = make(chan struct{})
		if c.Cgroups != nil {
			p.forker = tid
		}
		ch <- started{p: p}
		<-p.reapedCh
	}()
	s := <-ch
	if s.tid != 0 && c.Cgroups != nil {
		awaitThreadEnd(s.tid)
	}
	return s.p, s.err
}

// awaitThreadEnd waits, briefly and with a bound, until our thread tid has ended (tgkill answers ESRCH
// once the kernel has released it, and with it its cgroup memberships). A thread that is not seen to end
// within the bound is left: what it costs is a parent directory that stays busy until it does.
func awaitThreadEnd(tid int) {
	pid := unix.Getpid()
	wait := 20 * time.Microsecond
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if err := unix.Tgkill(pid, tid, 0); errors.Is(err, unix.ESRCH) {
			return
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Millisecond)
	}
}

// forkOnThisThread forks c from the calling, locked thread: with a fresh session keyring when c drops to
// another uid, and from inside c.Cgroups when set, which the thread leaves again right after the fork. A
// child whose forking thread cannot leave its cgroups is killed and reaped: the cgroups could not be
// removed after it.
func forkOnThisThread(c Command) (*Proc, error) {
	if dropsUID(c.Sys) {
		if err := joinFreshSessionKeyring(); err != nil {
			return nil, err
		}
	}
	if c.Cgroups == nil {
		return forkExec(c)
	}
	if err := c.Cgroups.EnterThread(); err != nil {
		return nil, fmt.Errorf("%w: join them: %w", ErrNotPlaced, err)
	}
	p, err := forkExec(c)
	leaveErr := c.Cgroups.LeaveThread()
	if err != nil {
		return nil, err
	}
	if leaveErr != nil {
		if p.Signal(syscall.SIGKILL) == nil {
			_, _ = p.Wait()
		}
		return nil, fmt.Errorf("%w: thread %d cannot leave them: %w", ErrNotPlaced, unix.Gettid(), leaveErr)
	}
	return p, nil
}
