package terminal

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/worker"
	"golang.org/x/sys/unix"
)

// callerTerminal is what a foreground launch does with the caller's terminal, from before its child starts
// until after it has been waited for (docs/security.md, "The terminal and the session"):
//   - a sandboxed worker whose stdio is a terminal runs behind a pty of its own (ptyRelay), the leader of
//     its own session: the caller's terminal is put in raw mode before the start, and the relay starts
//     copying as soon as the child holds the pty, before hlaunch waits for it;
//   - any other child whose stdin is the caller's terminal, with hlaunch in its foreground group, is made
//     the terminal's foreground group (^C reaches it directly, as without hlaunch), and hlaunch takes the
//     terminal back once the child is gone.
type callerTerminal struct {
	stdin   *os.File
	pty     *ptyRelay // nil unless sandboxed with a terminal among stdio
	fg      bool      // the child's group becomes the terminal's foreground group
	started bool      // the child runs: the foreground is taken back at close
}

// Open prepares the caller's terminal for a child started with attr: it sets attr's session,
// process group and controlling terminal, and returns the stdio the child gets (for a sandbox, each
// terminal of out is the pty's slave; titles lets the worker's title sequences through its relay). stdin
// is the caller's own. Its close is the one cleanup of every path after it, whether the child started or
// not; on error nothing is left to close.
func Open(sandboxed, titles bool, stdin *os.File, out worker.Stdio, attr *syscall.SysProcAttr) (*callerTerminal, worker.Stdio, error) {
	t := &callerTerminal{stdin: stdin}
	if sandboxed {
		var err error
		if t.pty, out, err = openPTYRelay(out); err != nil {
			return nil, worker.Stdio{}, err
		}
	}
	if t.pty == nil {
		if t.fg = foregroundTTY(stdin); t.fg {
			attr.Foreground, attr.Ctty = true, int(stdin.Fd())
		}
		return t, out, nil
	}
	t.pty.attr(attr)
	t.pty.filter.Titles = titles
	if err := t.pty.raw(); err != nil {
		t.pty.close()
		return nil, worker.Stdio{}, err
	}
	return t, out, nil
}

// ChildStarted is called once the child runs: the relay, if any, starts copying now, so that the worker's
// output reaches the caller while it runs. On error the caller ends the child.
func (t *callerTerminal) ChildStarted() error {
	t.started = true
	if t.pty == nil {
		return nil
	}
	return t.pty.relay()
}

// Close ends what Open began, once the child has been waited for (or never started): the pty's
// output still buffered is copied and the caller's terminal restored, or the terminal's foreground is
// taken back.
func (t *callerTerminal) Close() {
	if t.pty != nil {
		t.pty.close()
	}
	if t.fg && t.started {
		reclaimTTY(t.stdin)
	}
}

// foregroundTTY reports whether f is a terminal whose foreground process group is ours.
func foregroundTTY(f *os.File) bool {
	if f == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// reclaimTTY makes our process group the terminal's foreground group again once the child is gone.
func reclaimTTY(f *os.File) {
	// tcsetpgrp from a background group raises SIGTTOU; ignore it for this call.
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(int(f.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}
