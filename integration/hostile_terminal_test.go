package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The caller's terminal (a red team finding): a sandboxed worker whose stdio is a terminal runs behind a
// pty of its own (docs/security.md, "The terminal and the session").

// ptyRun is one run of a command as the leader of a new session whose controlling terminal is a pty the
// test made.
type ptyRun struct {
	shown   string // what the terminal showed, "\r\n" as "\n"
	pending int    // bytes in the terminal's input that nobody had read when the command ended (TIOCINQ)
	err     error  // cmd.Wait's
}

// onPTY runs cmd on a new pty of rows x cols (0: left as the kernel makes it) and types what answer
// returns for the output shown so far (called after every read, with the master to resize the terminal;
// "" types nothing).
func onPTY(t *testing.T, cmd *exec.Cmd, rows, cols uint16, answer func(shown string, ptm *os.File) string) ptyRun {
	t.Helper()
	ptm, pts := openPTY(t)
	defer ptm.Close()
	if rows > 0 {
		must(t, unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		pts.Close()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			mu.Lock()
			out.Write(buf[:max(n, 0)])
			typed := answer(out.String(), ptm)
			mu.Unlock()
			if typed != "" {
				_, _ = ptm.Write([]byte(typed))
			}
			if err != nil {
				return // EIO: every slave is closed
			}
		}
	}()
	var r ptyRun
	r.err = cmd.Wait()
	// The test's own slave is still open: what is left in the terminal's input is countable, a partial
	// line too once the terminal is out of canonical mode (TIOCINQ counts only whole lines in it).
	if tio, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS); err == nil {
		tio.Lflag &^= unix.ICANON
		_ = unix.IoctlSetTermios(int(pts.Fd()), unix.TCSETS, tio)
	}
	r.pending, _ = unix.IoctlGetInt(int(pts.Fd()), unix.TIOCINQ)
	pts.Close()
	<-copied
	r.shown = strings.ReplaceAll(out.String(), "\r\n", "\n")
	return r
}

// report decodes the child's report from what the terminal showed.
func (r ptyRun) report(t *testing.T) childReport {
	t.Helper()
	i := strings.Index(r.shown, "{")
	if i < 0 {
		t.Fatalf("no report on the terminal (%v): %q", r.err, r.shown)
	}
	var rep childReport
	if err := json.NewDecoder(strings.NewReader(r.shown[i:])).Decode(&rep); err != nil {
		t.Fatalf("%v: %q", err, r.shown)
	}
	return rep
}

// A sandboxed worker started as a background job of an interactive shell must not read what the user
// types at that shell. An ordinary background job that reads its terminal is stopped (SIGTTIN): the
// kernel's job control. A worker in the caller's session without a controlling terminal is outside job
// control, and holding the caller's terminal as its stdin it would read the user's next line - a password
// typed to sudo at the shell prompt - while the shell also waits for it. So hlaunch, a process of the
// job, touches the caller's terminal itself, and the kernel stops it there; the worker has a pty of its
// own. The shell here does what an interactive one does: it sees the job stop, reads the user's line
// itself, then brings the job to the foreground (`fg`), where the worker reads what is typed next,
// through hlaunch.
func TestRedteamSandboxReadsShellInput(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	shell := strings.Join([]string{
		"import os, signal, subprocess, sys",
		"p = subprocess.Popen(sys.argv[1:], process_group=0)",
		"_, st = os.waitpid(p.pid, os.WUNTRACED)",
		"if os.WIFSTOPPED(st):",
		"    print('job stopped', flush=True)",
		"    print('shell read:' + sys.stdin.readline().strip(), flush=True)",
		"    os.tcsetpgrp(0, p.pid)",
		"    os.killpg(p.pid, signal.SIGCONT)",
		"    _, st = os.waitpid(p.pid, 0)",
		"    signal.signal(signal.SIGTTOU, signal.SIG_IGN)",
		"    os.tcsetpgrp(0, os.getpgrp())",
		"sys.exit(os.waitstatus_to_exitcode(st))",
	}, "\n")
	args := []string{"-c", shell, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox",
		"--scope", "none", "--", selfBin, "child", "report", "readline:0"}
	cmd := exec.CommandContext(ctx, "python3", args...)
	cmd.Env = e.Launcher
	step := 0
	r := onPTY(t, cmd, 0, 0, func(shown string, _ *os.File) string {
		switch {
		case step == 0 && (strings.Contains(shown, "job stopped") || strings.Contains(shown, "reading")):
			// The user types at the shell's prompt, once the job runs in the background.
			step = 1
			return "hunter2\n"
		case step == 1 && strings.Contains(shown, "shell read:") && strings.Contains(shown[strings.Index(shown, "shell read:"):], "reading"):
			step = 2
			return "fg-line\n"
		}
		return ""
	})
	rep := r.report(t)
	got := rep.Checks["readline:0"]
	if got == "ok:hunter2" {
		t.Fatalf("a sandboxed background job read the line the user typed at its shell: %q", got)
	}
	if !strings.Contains(r.shown, "shell read:hunter2") {
		t.Errorf("the shell did not read the line typed at it: %q", r.shown)
	}
	if got != "ok:fg-line" {
		t.Errorf("brought to the foreground, the worker read %q, want the line typed then (ok:fg-line): %q", got, r.shown)
	}
	var ee *exec.ExitError
	if r.err != nil && !errors.As(r.err, &ee) {
		t.Fatal(r.err)
	}
	if r.err != nil {
		t.Errorf("the job ended with %v: %q", r.err, r.shown)
	}
}

// A foreground sandboxed worker on a terminal still has one: it reads what is typed, its stdin and
// stdout are a terminal (its own, its session's controlling terminal) with the caller's window size, also
// after the caller's window changed, and
// its exit code is hlaunch's. TIOCSTI (the filter off) types into its own terminal only: nothing reaches
// the caller's terminal's input.
func TestSandboxOwnTerminal(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox",
		"--scope", "none", "--seccomp", "off", "--", selfBin, "child", "report",
		"winsize:0", "winsize:1", "readline:0", "winsize-wait:0=50x120", "ttysid:0", "tiocsti:0")
	cmd.Env = e.Launcher
	typed := false
	r := onPTY(t, cmd, 37, 91, func(shown string, ptm *os.File) string {
		if !typed && strings.Contains(shown, "reading") {
			typed = true
			// The caller's window changes (the kernel sends hlaunch SIGWINCH), then the user types.
			must(t, unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 120}))
			return "typed-line\n"
		}
		return ""
	})
	if r.err != nil {
		t.Fatalf("%v: %q", r.err, r.shown)
	}
	c := r.report(t).Checks
	if got := c["readline:0"]; got != "ok:typed-line" {
		t.Errorf("the worker read %q, want ok:typed-line", got)
	}
	for _, k := range []string{"winsize:0", "winsize:1"} {
		if got := c[k]; got != "ok:37x91" {
			t.Errorf("%s: %q, want the caller's ok:37x91 (a terminal)", k, got)
		}
	}
	if got := c["winsize-wait:0=50x120"]; got != "ok:50x120" {
		t.Errorf("the caller's window grew to 50x120, the worker's is %q", got)
	}
	if got := c["ttysid:0"]; got != "ok:own" {
		t.Errorf("the worker's stdin is not its session's controlling terminal: %q", got)
	}
	if got := c["tiocsti:0"]; got != "ok" {
		t.Errorf("TIOCSTI on the worker's own terminal: %q, want ok (harmless there)", got)
	}
	if r.pending != 0 {
		t.Errorf("%d bytes were left in the caller's terminal's input: the worker typed into it", r.pending)
	}
	// The exit code is the worker's.
	cmd = exec.CommandContext(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox",
		"--scope", "none", "--", selfBin, "child", "exit", "7")
	cmd.Env = e.Launcher
	r = onPTY(t, cmd, 0, 0, func(string, *os.File) string { return "" })
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("exit: %v, want 7: %q", r.err, r.shown)
	}
}

// A detached sandboxed worker gets no terminal: there is no relay once hlaunch has returned, and a worker
// holding the caller's terminal outside its job control would read what is typed at the shell. With
// --stdio inherit from a terminal the launch is refused (125, naming the flag) and nothing runs.
func TestSandboxDetachedRefusesTerminal(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	ran := filepath.Join(e.Root, "profiles", "b", "ran")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hlaunchBin, "--root", e.Root, "--state-dir", e.State, "exec", "-p", "b", "--sandbox",
		"--scope", "none", "--detach", "--stdio", "inherit", "--", selfBin, "child", "report", "plant:"+ran+"=x")
	cmd.Env = e.Launcher
	r := onPTY(t, cmd, 0, 0, func(string, *os.File) string { return "" })
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) || ee.ExitCode() != 125 || !strings.Contains(r.shown, "--stdio inherit: stdin is a terminal") {
		t.Fatalf("a detached sandboxed worker on the caller's terminal: %v: %q", r.err, r.shown)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the refused worker ran")
	}
}
