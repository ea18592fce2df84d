package terminal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/termfilter"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// drainBound bounds how long output still buffered in the pty is copied once the worker has exited. Every
// process of the sandbox is gone by then (its pid namespace ended with its init), so the master reads EIO
// at once; the bound only matters when the worker passed the slave to a process outside (SCM_RIGHTS).
const drainBound = 2 * time.Second

// ptyRelay is the pty of its own a sandboxed worker whose stdio is a terminal runs behind
// (docs/security.md, "The terminal and the session"). The worker gets the slave as its controlling
// terminal and as each of its stdin, stdout and stderr that was a terminal; hlaunch copies bytes between
// the caller's terminal and the master, the worker's output through a filter that passes only what draws
// on the screen (internal/termfilter). hlaunch stays a process of the caller's job: in the background its
// own tcsetattr, read or write of the caller's terminal stops it (SIGTTOU, SIGTTIN) as for any job, and the
// worker, whose terminal the caller's is not, never touches the caller's.
type ptyRelay struct {
	master, slave *os.File
	mfd           int      // the master's descriptor, for ioctls (master.Fd would make it blocking)
	ctty          int      // the slave's descriptor number in the child: 0, 1 or 2
	in            *os.File // the caller's stdin when it is a terminal, else nil
	out           *os.File // the caller's terminal the worker's output is copied to
	size          *os.File // the caller's terminal the window size is read from
	saved         *unix.Termios
	stop          [2]int // a pipe that ends the input copy
	outDone       chan struct{}
	inDone        chan struct{}
	winch         chan os.Signal
	winchDone     chan struct{}

	filter   termfilter.Options // what of the worker's output passes besides the screen
	filtered *termfilter.Writer // the caller's terminal (out), through the filter
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// CheckInherited refuses a terminal as the stdio a detached worker inherits (--stdio inherit) when it is
// sandboxed or runs as another uid than the launcher's (otherUID): a detached worker has no relay, and
// holding the caller's terminal without being in its job control it would read what is typed at the
// caller's shell (docs/security.md, "The terminal and the session").
func CheckInherited(spec worker.Spec, stdio worker.Stdio, otherUID bool) error {
	if spec.Stdio != worker.StdioInherit || (!spec.Sandbox && !otherUID) {
		return nil
	}
	who := "sandboxed worker"
	if !spec.Sandbox {
		who = "worker of another uid than the launcher's"
	}
	for i, f := range []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr} {
		if isTerminal(f) {
			return fmt.Errorf("%w: --stdio inherit: %s is a terminal, and a detached %s gets none (run it in the foreground, where it gets a terminal of its own, or give it pipes or files)", worker.ErrInvalid, [...]string{"stdin", "stdout", "stderr"}[i], who)
		}
	}
	return nil
}

// openPTYRelay returns nil and stdio unchanged when none of stdio is a terminal (pipes, files: nothing to
// relay). Otherwise it opens a pty and returns it with stdio in which every terminal is the slave.
func openPTYRelay(stdio worker.Stdio) (*ptyRelay, worker.Stdio, error) {
	files := []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr}
	r := &ptyRelay{ctty: -1, stop: [2]int{-1, -1}}
	for i, f := range files {
		if !isTerminal(f) {
			continue
		}
		if r.ctty < 0 {
			r.ctty, r.size = i, f
		}
		if i == 0 {
			r.in = f
		} else if r.out == nil {
			r.out = f
		}
	}
	if r.ctty < 0 {
		return nil, stdio, nil
	}
	if r.out == nil {
		r.out = r.in // the echo of what is typed goes back where it was typed
	}
	// Non-blocking, so that the master is in the runtime's poller: the drain's deadline works on it.
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, stdio, fmt.Errorf("the worker's terminal: %w", &os.PathError{Op: "open", Path: "/dev/ptmx", Err: err})
	}
	r.mfd, r.master = mfd, os.NewFile(uintptr(mfd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		r.close()
		return nil, stdio, fmt.Errorf("the worker's terminal: %w", os.NewSyscallError("ioctl(TIOCSPTLCK)", err))
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		r.close()
		return nil, stdio, fmt.Errorf("the worker's terminal: %w", os.NewSyscallError("ioctl(TIOCGPTN)", err))
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		r.close()
		return nil, stdio, fmt.Errorf("the worker's terminal: %w", &os.PathError{Op: "open", Path: name, Err: err})
	}
	r.slave = os.NewFile(uintptr(fd), name)
	r.copySize()
	for i, f := range files {
		if isTerminal(f) {
			files[i] = r.slave
		}
	}
	stdio.Stdin, stdio.Stdout, stdio.Stderr = files[0], files[1], files[2]
	return r, stdio, nil
}

// attr makes the child the leader of a new session whose controlling terminal is the slave. A session
// leader cannot change its process group, and the caller's terminal is no longer the child's: no
// Setpgid, no Foreground.
func (r *ptyRelay) attr(attr *syscall.SysProcAttr) {
	attr.Setpgid, attr.Foreground = false, false
	attr.Setsid, attr.Setctty, attr.Ctty = true, true, r.ctty
}

// raw puts the caller's terminal, when stdin is one, in raw mode: every byte typed (^C, ^Z, ^D too) goes
// to the worker's terminal, whose own line discipline acts on it. Called in the background, the kernel
// stops hlaunch here (SIGTTOU) until it is brought to the foreground.
func (r *ptyRelay) raw() error {
	if r.in == nil {
		return nil
	}
	fd := int(r.in.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("the caller's terminal: %w", os.NewSyscallError("ioctl(TCGETS)", err))
	}
	saved := *t
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETSW, t); err != nil {
		return fmt.Errorf("the caller's terminal: %w", os.NewSyscallError("ioctl(TCSETSW)", err))
	}
	r.saved = &saved
	return nil
}

// relay starts copying, once the child holds the slave: the worker's output to the caller (filtered: no
// sequence that acts outside the screen reaches the caller's terminal; a primary device attributes query
// is answered by the relay itself, into the worker's input), the caller's input to the worker, and the
// caller's window size on every SIGWINCH.
func (r *ptyRelay) relay() error {
	_ = r.slave.Close() // the child has its own: the master reads EIO once every copy is closed
	r.slave = nil
	r.outDone = make(chan struct{})
	r.filtered = termfilter.NewWriter(r.out, answerWriter(r.mfd), r.filter)
	go func() {
		defer close(r.outDone)
		_, _ = io.Copy(r.filtered, r.master)
	}()
	r.winch = make(chan os.Signal, 1)
	signal.Notify(r.winch, syscall.SIGWINCH)
	r.winchDone = make(chan struct{})
	go func() {
		defer close(r.winchDone)
		for range r.winch {
			r.copySize()
		}
	}()
	if r.in == nil {
		return nil
	}
	if err := unix.Pipe2(r.stop[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("the worker's terminal: %w", os.NewSyscallError("pipe2", err))
	}
	r.inDone = make(chan struct{})
	go func() {
		defer close(r.inDone)
		r.copyIn(int(r.in.Fd()), r.stop[0])
	}()
	return nil
}

// copyIn copies what the caller types to the master until stop is readable. It polls before each read so
// that nothing typed after the worker ended is consumed. At the end of the caller's input (a hang-up) the
// worker's terminal gets its end-of-file character.
func (r *ptyRelay) copyIn(in, stop int) {
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
		if _, err := linux.Poll(fds, -1); err != nil {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		n, err := linux.Retry(func() (int, error) { return unix.Read(in, buf) })
		if errors.Is(err, unix.EAGAIN) {
			continue
		}
		if n <= 0 || err != nil {
			_, _ = r.master.Write([]byte{4}) // VEOF (^D) of the worker's terminal in canonical mode
			return
		}
		if _, err := r.master.Write(buf[:n]); err != nil {
			return
		}
	}
}

// answerWriter writes the relay's own answers to the worker's queries (termfilter.DAAnswer) into the
// worker's input, once and without waiting: a worker that does not read its input fills it, and the
// output copy must not wait on it. An answer that does not fit is dropped. So is an answer while the
// worker's terminal is in canonical mode: a program that waits for the answer puts its terminal out of it
// first, and into a canonical terminal the answer would be typed into the worker's line (a shell's
// command line) and echoed to the caller.
type answerWriter int

// Write writes p to the master's descriptor once, unless the worker's terminal is canonical.
func (fd answerWriter) Write(p []byte) (int, error) {
	if t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err == nil && t.Lflag&unix.ICANON != 0 {
		return len(p), nil
	}
	n, err := linux.Retry(func() (int, error) { return unix.Write(int(fd), p) })
	if err != nil {
		return 0, os.NewSyscallError("write", err)
	}
	return n, nil
}

// copySize gives the worker's terminal the caller's window size (the kernel sends the worker SIGWINCH).
func (r *ptyRelay) copySize() {
	if ws, err := unix.IoctlGetWinsize(int(r.size.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(r.mfd, unix.TIOCSWINSZ, ws)
	}
}

// Close ends the relay once the worker has exited: it copies the output still buffered, turns off the
// input modes the worker left on (mouse and focus reporting, bracketed paste, key encodings: the caller's
// terminal would type their reports into the caller's shell), stops the input copy, restores the caller's
// terminal and closes the pty. It is the one cleanup of every exit path.
func (r *ptyRelay) close() {
	if r.stop[1] >= 0 {
		_, _ = unix.Write(r.stop[1], []byte{0})
	}
	if r.winch != nil {
		signal.Stop(r.winch)
		close(r.winch)
		<-r.winchDone // no size is copied to a closed (or reused) descriptor
	}
	if r.outDone != nil {
		_ = r.master.SetReadDeadline(time.Now().Add(drainBound))
		if awaitBounded(r.outDone) { // else the copy still writes through the filter: it is left alone
			_ = r.filtered.Close() // the input modes the worker left on are turned off
		}
	}
	stopped := r.inDone == nil || awaitBounded(r.inDone)
	if r.saved != nil {
		_ = unix.IoctlSetTermios(int(r.in.Fd()), unix.TCSETSW, r.saved)
	}
	if r.slave != nil {
		_ = r.slave.Close()
	}
	if r.master != nil {
		_ = r.master.Close()
	}
	if stopped { // else the input copy may still poll the pipe: it stays open until hlaunch exits
		for _, fd := range r.stop {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
		}
	}
}

// awaitBounded waits for done at most drainBound and reports whether it was closed.
func awaitBounded(done <-chan struct{}) bool {
	t := time.NewTimer(drainBound)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
