package proc

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

// heldParentEnv makes the test binary act as a parent that holds a child and then waits to be killed.
const heldParentEnv = "HLAUNCH_TEST_HELD_PARENT"

func TestMain(m *testing.M) {
	if mark := os.Getenv(heldParentEnv); mark != "" {
		h, err := Hold(Command{Path: "/bin/sh", Args: []string{"sh", "-c", "echo ran >" + mark}})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(h.Proc.Pid) + "\n")
		time.Sleep(time.Minute) // killed by the test
		os.Exit(1)
	}
	os.Exit(testutil.RunWithLeakCheck(m))
}

// procState returns the state letter and the tracer of pid.
func procState(t *testing.T, pid int) (state string, tracer string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			state = strings.Fields(v)[0]
		}
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			tracer = strings.TrimSpace(v)
		}
	}
	return state, tracer
}

// A held child has exec'd the target (its /proc/<pid>/exe is the program) but has run none of it; Release
// lets it run untraced.
func TestHoldThenRelease(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "mark")
	h, err := Hold(Command{Path: "/bin/sh", Args: []string{"sh", "-c", `echo ran >"$0"; grep TracerPid /proc/self/status >>"$0"`, mark}})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(h.Proc.Pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks("/bin/sh"); exe != want {
		t.Errorf("held child's exe = %s, want %s (the exec had happened)", exe, want)
	}
	if state, tracer := procState(t, h.Proc.Pid); state != "t" || tracer != strconv.Itoa(unix.Gettid()) {
		t.Errorf("held child: state %q tracer %s, want a tracing stop (t) traced by this thread (Hold locked it)", state, tracer)
	}
	// In a tracing stop (read above) it runs nothing until Release: no wait can add to that.
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the target ran before Release")
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	ws, err := h.Proc.Wait()
	if err != nil || ExitCode(ws) != 0 {
		t.Fatalf("target: exit %d, %v", ExitCode(ws), err)
	}
	b, err := os.ReadFile(mark)
	if err != nil || string(b) != "ran\nTracerPid:\t0\n" {
		t.Fatalf("target's report %q, %v; want it run, untraced", b, err)
	}
	if err := h.Release(); err == nil {
		t.Error("second Release succeeded")
	}
}

func TestHoldAbort(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "mark")
	h, err := Hold(Command{Path: "/bin/sh", Args: []string{"sh", "-c", `echo ran >"$0"`, mark}})
	if err != nil {
		t.Fatal(err)
	}
	pid := h.Proc.Pid
	h.Abort()
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("an aborted target ran")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("aborted child %d still exists (kill 0: %v)", pid, err)
	}
}

func TestHoldExecErrors(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "data")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{plain: unix.EACCES, filepath.Join(dir, "none"): unix.ENOENT} {
		if h, err := Hold(Command{Path: path, Args: []string{path}}); !errors.Is(err, want) || errors.Is(err, ErrNotHeld) {
			t.Errorf("Hold(%s) = %v, %v; want %v", path, h, err, want)
		}
	}
}

// When the holding parent dies, the child dies with it and never runs the target: the kernel kills a
// PTRACE_O_EXITKILL tracee before it detaches it. The parent here sets no parent-death signal, so the
// option alone is tested.
func TestHoldParentDies(t *testing.T) {
	// The orphaned child is re-parented to us, so we can reap it and leave nothing behind.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) //nolint:errcheck
	mark := filepath.Join(t.TempDir(), "mark")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = []string{heldParentEnv + "=" + mark}
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("parent's report %q: %v %v", line, err, perr)
	}
	if state, _ := procState(t, pid); state != "t" {
		t.Errorf("child %d state %q before the parent's death, want t", pid, state)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				t.Fatalf("reap orphaned child %d: %v", pid, err)
			}
			break
		}
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("orphaned held child: %s, want killed by SIGKILL", describe(ws))
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the held target ran after its parent died")
	}
}

// Environment switches of the test binary for TestHoldKeepsSetuid.
const (
	holdSetuidEnv = "HLAUNCH_TEST_HOLD_SETUID" // act as an unprivileged launcher holding this setuid program
	printEUIDEnv  = "HLAUNCH_TEST_PRINT_EUID"  // print the effective uid and exit
)

func init() {
	// Runs before TestMain's own switches: the setuid copy of the test binary only reports.
	if os.Getenv(printEUIDEnv) != "" {
		os.Stdout.WriteString("euid " + strconv.Itoa(os.Geteuid()) + "\n")
		os.Exit(0)
	}
	if prog := os.Getenv(holdSetuidEnv); prog != "" {
		os.Exit(holdSetuidMain(prog))
	}
}

// holdSetuidMain holds prog (a set-user-ID root program) as an unprivileged caller and lets it report its
// effective uid; "refused" when Hold says it cannot hold it.
func holdSetuidMain(prog string) int {
	env := []string{printEUIDEnv + "=1"}
	h, err := Hold(Command{Path: prog, Args: []string{prog}, Env: env, Files: []*os.File{nil, os.Stdout, os.Stderr}})
	if errors.Is(err, ErrNotHeld) {
		os.Stdout.WriteString("refused\n")
		return 0
	}
	if err == nil {
		err = h.Release()
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	if _, err := h.Proc.Wait(); err != nil {
		return 1
	}
	return 0
}

// A held exec must never run a program with less than a plain exec gives it. The kernel ignores the
// set-user-ID bit at an exec traced by a tracer without CAP_SYS_PTRACE, so an unprivileged caller's Hold
// refuses (ErrNotHeld; the launcher then uses the init stub) instead of starting a `sudo` that is not root.
func TestHoldKeepsSetuid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a set-user-ID root program and to become nobody")
	}
	dir, err := os.MkdirTemp("", "hlaunch-hold-setuid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(dir, 0o755))
	self, err := os.Executable()
	must(err)
	data, err := os.ReadFile(self)
	must(err)
	// Two copies of this test binary, readable by nobody: the unprivileged launcher, and the set-user-ID
	// root program it holds.
	launcher := filepath.Join(dir, "launcher")
	must(os.WriteFile(launcher, data, 0o755))
	prog := filepath.Join(dir, "report-euid")
	must(os.WriteFile(prog, data, 0o755))
	must(os.Chmod(prog, 0o755|os.ModeSetuid)) // owned by root: set-user-ID root
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}}
	// Untraced, the bit works on this filesystem (else the check below would prove nothing).
	plain := exec.Command(prog)
	plain.Env = []string{printEUIDEnv + "=1"}
	plain.SysProcAttr = nobody
	out, err := plain.Output()
	if err != nil || strings.TrimSpace(string(out)) != "euid 0" {
		t.Fatalf("plain exec of the set-user-ID program as nobody: %q, %v; want euid 0", out, err)
	}
	held := exec.Command(launcher, "-test.run=^$")
	held.Env = []string{holdSetuidEnv + "=" + prog}
	held.SysProcAttr = nobody
	out, err = held.Output()
	if got := strings.TrimSpace(string(out)); err != nil || (got != "refused" && got != "euid 0") {
		t.Fatalf("held exec as nobody: %q, %v; want the program to run as root, or Hold to refuse", got, err)
	}
}
