package handshake

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/coverdir"
	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/msgpipe"
	"github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/seccomp"
)

// Main is the stub's whole life: read the Config (the go-ahead), enter the sandbox if asked, and exec the
// target. It never returns. Exit 127 means the command was not found, 126 that it could not run, 125 any
// earlier failure; the parent learns the detail over the result pipe.
func Main() {
	// Capabilities and some sandbox steps are per thread: the thread that sets them must be the one that
	// execs.
	runtime.LockOSThread()
	startUnmasked()
	unix.CloseOnExec(ConfigFD)
	unix.CloseOnExec(ResultFD)
	unix.CloseOnExec(StatusFD)
	res := os.NewFile(ResultFD, "handshake-result")
	// A cover build's counters (internal/coverdir): opened once the parent has placed us (and written a
	// user namespace's id maps), before the sandbox; written before the exec or exit. Nil, and a plain
	// os.Exit, in every other build.
	var cov *coverdir.Counters
	fail := func(stage string, err error, code int) {
		f := Failure{Stage: stage, Message: err.Error()}
		var errno unix.Errno
		if errors.As(err, &errno) {
			f.Errno = int(errno)
		}
		_ = msgpipe.WriteJSON(res, f)
		cov.Exit(code)
	}
	// In a new pid namespace the stub will be the init. Enabling the forwarded signals takes the runtime a
	// hand-off per signal, so it happens now, while the parent is still placing us.
	var sigs chan os.Signal
	notified := make(chan struct{})
	if os.Getpid() == 1 {
		sigs = make(chan os.Signal, 64)
		go func() { signal.Notify(sigs, forwarded...); close(notified) }()
	}
	cfg, err := readConfig(os.NewFile(ConfigFD, "handshake-config"))
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The parent went away before placing us: never run the target unplaced.
		os.Exit(125)
	case err != nil:
		fail("config", err, 125)
	}
	cov = coverdir.Open()
	if len(cfg.Argv) == 0 {
		fail("config", errors.New("empty argv"), 125)
	}
	if cfg.Sandbox != nil {
		if err := cfg.Sandbox.Enter(); err != nil {
			fail("sandbox", err, 125)
		}
	}
	if cfg.Cwd != "" {
		if err := unix.Chdir(cfg.Cwd); err != nil {
			fail("chdir", &os.PathError{Op: "chdir", Path: cfg.Cwd, Err: err}, 125)
		}
	}
	path, err := proc.LookPath(cfg.Argv[0], envPath(cfg.Env))
	if err != nil {
		fail("lookup", err, proc.ExitCodeFor(err))
	}
	if cfg.Sandbox != nil && !cfg.Sandbox.SeccompOff {
		// Last, right before the target starts: after no_new_privs (Sandbox.Enter) and after every call
		// the stub needs that the filter refuses. It covers the init too, which stays.
		if err := installFilter(); err != nil {
			fail("seccomp", err, 125)
		}
	}
	if cfg.Sandbox != nil {
		// In a new pid namespace the stub stays as its init: PID 1 gets only the signals it has handlers
		// for, so a target that was PID 1 itself would never hear a plain SIGTERM (a `stop` would always
		// wait out the grace). The init forwards every signal to the target, reaps, and exits with the
		// target's status; when it exits the kernel ends the rest of the namespace.
		// Every forwarded signal is caught before anyone can learn the worker's identity, and before the
		// fork: a signal the launcher was started with ignored (SIGHUP, SIGINT: the Go runtime leaves
		// those alone) would otherwise still be ignored in the target; once caught, the fork resets it.
		<-notified
		defaultIgnored()
		target, err := proc.Spawn(proc.Command{Path: path, Args: cfg.Argv, Env: cfg.Env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: ownTerminal()})
		if err != nil {
			fail("exec", err, proc.ExitCodeFor(err))
		}
		res.Close() // EOF: the target runs
		cov.Flush()
		ws := initLoop(target.Pid, sigs)
		// The target's own end, for the parent's Proc.Wait: this init cannot die of the same signal (a
		// pid namespace's init ignores a signal it sends itself), so its exit code alone would make a
		// SIGKILL look like `exit 137`.
		_ = proc.WriteStatus(os.NewFile(StatusFD, "handshake-status"), ws)
		cov.Exit(proc.ExitCode(ws))
	}
	cov.Flush()
	err = unix.Exec(path, cfg.Argv, cfg.Env)
	fail("exec", &os.PathError{Op: "execve", Path: path, Err: err}, proc.ExitCodeFor(err))
}

// ownTerminal returns, for an init that leads a session with a pty of its own as its controlling terminal
// (the launcher's relay made it so), the attributes that put the target in a process group of its own as
// that terminal's foreground group: what is typed there (^C, ^Z) reaches the target's group alone, and
// not a second time through the init's forwarding. Otherwise nil: the target shares the init's group.
func ownTerminal() *syscall.SysProcAttr {
	if sid, err := unix.Getsid(0); err != nil || sid != unix.Getpid() {
		return nil
	}
	for fd := range 3 {
		if sid, err := unix.IoctlGetInt(fd, unix.TIOCGSID); err == nil && sid == unix.Getpid() {
			return &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: fd}
		}
	}
	return nil
}

// forwarded are the signals the sandbox's init passes on to the target: the ones a supervisor sends. Not
// "all": enabling each is a hand-off to the runtime's signal thread, paid on every launch (ADR 0006).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1,
	syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGALRM, syscall.SIGCONT, syscall.SIGTSTP}

// initLoop is PID 1 of a sandbox: it forwards signals to the target and reaps every process until the
// target ends, then returns the target's wait status.
func initLoop(target int, sigs <-chan os.Signal) syscall.WaitStatus {
	go func() {
		for s := range sigs {
			if sig, ok := s.(syscall.Signal); ok {
				_ = syscall.Kill(target, sig)
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		pid, err := linux.Retry(func() (int, error) { return syscall.Wait4(-1, &ws, 0, nil) })
		if err != nil {
			return 125 << 8 // no child left without having seen the target (exit 125): cannot happen
		}
		if pid == target {
			return ws
		}
	}
}

func envPath(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v
		}
	}
	return ""
}

// installFilter assembles the default system-call filter and puts it on every thread of the stub.
func installFilter() error {
	f, err := seccomp.Default()
	if err != nil {
		return err
	}
	return f.Install()
}
