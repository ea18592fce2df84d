package launcher

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
	"github.com/hlaunch/hlaunch/internal/placement"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/terminal"
	"github.com/hlaunch/hlaunch/internal/view"
	"github.com/hlaunch/hlaunch/internal/worker"
	"github.com/hlaunch/hlaunch/internal/workerlog"
)

// Signals are what a foreground launch forwards to its child.
type Signals struct {
	// C delivers the signals to forward; nil forwards nothing.
	C <-chan os.Signal
	// Ready, when not nil, is closed once C is subscribed. Run waits for it before it creates anything on
	// the host, so a signal that ends hlaunch earlier leaves nothing behind to clean up. Subscribing costs
	// a round trip to the Go runtime's signal thread per signal (ADR 0006), which a caller
	// can overlap with Run's own reading of the profile this way.
	Ready <-chan struct{}
}

// awaitReady returns once the signals are subscribed (at once without Ready): before it, Run creates
// nothing on the host.
func (s Signals) awaitReady() {
	if s.Ready != nil {
		<-s.Ready
	}
}

// Run starts spec in the foreground with stdio as the child's own descriptors, forwards every signal
// received on sigs.C to it, waits, removes its cgroup, and returns its exit code (128+N for signal N).
// A launch that fails before the target runs returns ExitCode(err) and err. When ctx is cancelled while
// the child runs, the child is stopped as at a --timeout (SIGTERM to its tree, the whole tree killed after
// the grace), and Run returns, once it has been waited for and its cgroup removed, ExitInternal and an
// error wrapping ctx's cause (context.Canceled or context.DeadlineExceeded).
func (l *Launcher) Run(ctx context.Context, spec worker.Spec, stdio worker.Stdio, sigs Signals) (int, error) {
	if spec.Detach {
		return worker.ExitInternal, fmt.Errorf("%w: Run is for foreground launches; use Start with --detach", worker.ErrInvalid)
	}
	spec, err := l.resolve(spec, false)
	if err != nil {
		return worker.ExitCode(err), err
	}
	env, prof, who, err := l.compose(spec)
	if err != nil {
		return worker.ExitCode(err), err
	}
	cwd, sb, err := l.workerPlace(spec, env, prof, who)
	if err != nil {
		return worker.ExitCode(err), err
	}
	id := worker.NewWorkerID()
	sigs.awaitReady()
	if ctx.Err() != nil {
		return worker.ExitInternal, fmt.Errorf("launch cancelled: %w: nothing was started", context.Cause(ctx))
	}
	p, err := l.Prepare(ctx, spec, id)
	if err != nil {
		return worker.ExitCode(err), err
	}
	defer p.Release(context.WithoutCancel(ctx))
	if w := p.Describe().Warning; w != "" {
		fmt.Fprintln(l.cfg.Stderr, w)
	}
	out, closeOut, err := logStdio(spec, stdio)
	if err != nil {
		return worker.ExitCode(err), err
	}
	defer closeOut()
	// The child gets its own process group so a signal to hlaunch's group reaches it once, through us. On a
	// terminal its group becomes the foreground one, so ^C reaches it directly, as without hlaunch.
	attr := syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A foreground child dies with hlaunch (it is an argv prefix, not a supervisor). The kernel sends the
	// parent-death signal when the *thread* that forked exits (golang/go#27505), so that thread stays
	// locked to this goroutine until the child has been waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The caller's terminal: a pty of its own for a sandbox and for a worker of another uid (in the
	// caller's session it could type into the caller's shell with TIOCSTI), else the terminal's foreground
	// for the child.
	term, out, err := terminal.Open(sb != nil || who.OtherUID(), spec.TTYTitles, stdio.Stdin, out, &attr)
	if err != nil {
		return worker.ExitCode(err), err
	}
	defer term.Close()
	proc, err := l.start(ctx, spec, id, p, childStart{argv: spec.Argv, env: env.Strings(), cwd: cwd, stdio: out, sb: sb, attr: attr, cred: who.Credential()})
	if err != nil {
		return worker.ExitCode(err), err
	}
	if err := term.ChildStarted(); err != nil {
		_ = proc.Signal(syscall.SIGKILL)
		_, _ = proc.Wait()
		return worker.ExitCode(err), err
	}
	done := make(chan struct{})
	go forward(proc, sigs.C, done)
	stopEnd := l.enforceEnd(ctx, spec, p, proc)
	ws, err := proc.Wait()
	close(done)
	why := stopEnd()
	if err != nil {
		return worker.ExitInternal, fmt.Errorf("wait: %w", err)
	}
	switch why {
	case endTimeout:
		// As timeout(1): 124, and said, so that a deadline is never mistaken for the command's own 143.
		return worker.ExitTimeout, fmt.Errorf("%w: --timeout %s reached: the worker was stopped (SIGTERM, the whole cgroup killed after the grace; it ended with %d)", worker.ErrTimedOut, spec.Timeout, hproc.ExitCode(ws))
	case endCancelled:
		// The caller gave up on the launch (an embedding program's context): the worker was stopped as at a
		// deadline, and the caller's own error is returned (125, docs/exit-codes.md), never the child's code.
		return worker.ExitInternal, fmt.Errorf("launch cancelled: %w: the worker was stopped (SIGTERM, the whole cgroup killed after the grace; it ended with %d)", context.Cause(ctx), hproc.ExitCode(ws))
	}
	l.sayOOM(p, ws)
	return hproc.ExitCode(ws), nil
}

// sayOOM says on stderr, in one line, when the kernel's OOM killer ended the worker: its 137 is otherwise
// indistinguishable from any SIGKILL.
func (l *Launcher) sayOOM(p placement.Placement, ws syscall.WaitStatus) {
	g := p.Group()
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || g == nil {
		return
	}
	if st, err := g.Stats(); err == nil && st.OOMKills > 0 {
		fmt.Fprintf(l.cfg.Stderr, "hlaunch: the worker was killed by the kernel's OOM killer (memory limit %d bytes, %d OOM kills in its cgroup)\n", p.Describe().Limits.Memory, st.OOMKills)
	}
}

// forward relays signals to the leader until done. The leader is our unreaped child, so its PID cannot
// have been recycled while we forward (Proc.Signal refuses once it is reaped).
func forward(proc *hproc.Proc, signals <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case s, ok := <-signals:
			if !ok {
				return
			}
			if sig, ok := s.(syscall.Signal); ok {
				_ = proc.Signal(sig)
			}
		}
	}
}

// Why enforceEnd stopped a foreground worker, if it did.
const (
	endNone      = iota // the worker ended by itself (or by a forwarded signal)
	endTimeout          // --timeout was reached
	endCancelled        // Run's context was cancelled
)

// enforceEnd stops the worker at its --timeout or when ctx is cancelled, whichever comes first: SIGTERM,
// and the whole tree killed after the grace. It returns a function that cancels both and reports which
// one stopped the worker (endNone if neither did). A sandbox's init (the leader) gets no SIGTERM of its
// own: it would forward a second copy to the target. The tree's SIGTERM goes through a fingerprint handle
// pinned while the leader is our unreaped child (pidfds, never bare PIDs).
func (l *Launcher) enforceEnd(ctx context.Context, spec worker.Spec, p placement.Placement, proc *hproc.Proc) func() int {
	timeout, _ := spec.TimeoutDuration()
	grace, _ := spec.GraceDuration()
	g := p.Group()
	var (
		mu   sync.Mutex
		why  = endNone
		kill *time.Timer
		over bool // the worker has been waited for: nothing more is sent
	)
	begin := func(reason int) {
		mu.Lock()
		defer mu.Unlock()
		if over || why != endNone {
			return
		}
		why = reason
		l.termTree(spec, g, proc)
		kill = time.AfterFunc(grace, func() {
			if g != nil {
				l.killTree(g.Kill, g.Path(), treeKillWait)
			} else {
				_ = proc.Signal(syscall.SIGKILL)
			}
		})
	}
	var term *time.Timer
	if timeout > 0 {
		term = time.AfterFunc(timeout, func() { begin(endTimeout) })
	}
	stopCancel := context.AfterFunc(ctx, func() { begin(endCancelled) })
	return func() int {
		stopCancel()
		if term != nil {
			term.Stop()
		}
		mu.Lock()
		defer mu.Unlock()
		over = true
		if kill != nil {
			kill.Stop()
		}
		return why
	}
}

// treeKillWait bounds the wait of a foreground worker's whole-cgroup kill for the cgroup to empty: a
// process in uninterruptible sleep (D state) dies only when its sleep ends, which may be never.
const treeKillWait = 10 * time.Second

// killTree kills the whole cgroup (kill is Group.Kill) and waits up to bound for it to empty. Past the
// bound it says so in one line on stderr and returns: what is left stays in the cgroup (release tries
// once more, then leaves it for gc), and the exit status is still decided by the leader's end (124 at a
// --timeout: docs/exit-codes.md).
func (l *Launcher) killTree(kill func(context.Context) error, path string, bound time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := kill(ctx); err != nil {
		fmt.Fprintf(l.cfg.Stderr, "hlaunch: the worker's cgroup %s did not empty within %s of SIGKILL (a process in uninterruptible sleep?): %v\n", path, bound, err)
	}
}

// termTree sends SIGTERM to the worker's tree, or to its leader alone when it has no cgroup or the tree's
// identity no longer verifies.
func (l *Launcher) termTree(spec worker.Spec, g *cgroup.Group, proc *hproc.Proc) {
	if g == nil {
		_ = proc.Signal(syscall.SIGTERM)
		return
	}
	h, _, err := fingerprint.Authorize(l.Src, fingerprint.CaptureChild(l.Src, proc.Pid, g.Path()))
	if err != nil || h == nil {
		_ = proc.Signal(syscall.SIGTERM) // reaped meanwhile, or not verifiable: the leader alone, safely
		return
	}
	defer h.Close()
	_ = signalAll(context.Background(), h, spec.Sandbox, syscall.SIGTERM)
}

// workerPlace decides where the worker of spec runs: its working directory and its sandbox (nil without
// one), and refuses directories it must not be given (view.CheckWorkerDirs).
func (l *Launcher) workerPlace(spec worker.Spec, env profile.Environ, prof *profile.Profile, who worker.Identity) (string, *sandbox.Spec, error) {
	cwd, err := l.cwd(spec)
	if err != nil {
		return "", nil, err
	}
	cwd = view.WorkerCwd(spec, cwd, prof.Home, who)
	sb, cwd, err := view.Sandbox(spec, prof, who, cwd, l.root, []string{l.StatePath, l.LedgerPath}, l.cfg.Hide, l.cfg.Environ)
	if err != nil {
		return "", nil, err
	}
	if err := view.CheckWorkerDirs(spec, env, cwd, who); err != nil {
		return "", nil, err
	}
	return cwd, sb, nil
}

func (l *Launcher) cwd(spec worker.Spec) (string, error) {
	if spec.Cwd != "" {
		st, err := os.Stat(spec.Cwd)
		if err != nil || !st.IsDir() {
			return "", fmt.Errorf("%w: --cwd %s: not a directory", worker.ErrInvalid, spec.Cwd)
		}
		return spec.Cwd, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("current directory: %w", err)
	}
	return wd, nil
}

// logStdio returns the stdio for the child: stdout and stderr go to spec.Log when it is set, else to
// stdio's own. The returned function closes what was opened here.
func logStdio(spec worker.Spec, stdio worker.Stdio) (worker.Stdio, func(), error) {
	if spec.Log == "" {
		return stdio, func() {}, nil
	}
	f, err := workerlog.Open(spec.Log, spec.LogMax)
	if err != nil {
		return worker.Stdio{}, nil, err
	}
	stdio.Stdout, stdio.Stderr = f, f
	return stdio, func() { f.Close() }, nil
}
