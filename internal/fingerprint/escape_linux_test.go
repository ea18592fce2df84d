package fingerprint

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A leader that moves itself out of its cgroup (an unsandboxed root worker can write cgroupfs) is never
// taken for an exited worker, nor signalled: whether members remain or the cgroup is empty, the verdict is
// recycled and its reason says the leader left, never "the PID now names another process" with the same
// start tick twice.
func TestKernelLeaderLeftItsCgroup(t *testing.T) {
	requireRoot(t)
	tr := newTree(t)
	w := tr.mkdir("w")
	out := tr.mkdir("out")
	p := tr.start(w, "sleep", "300")
	id := mustCapture(t, tr.src(), p.pid, w)
	member := tr.start(w, "sleep", "300")
	t.Cleanup(func() { tr.kill(out) }) // runs before the processes' own cleanups, which look in w
	move := func(pid int, to string) {
		t.Helper()
		if err := os.WriteFile(tr.path(to)+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	move(p.pid, out)
	v := requireVerdict(t, tr.src(), id, Recycled)
	if !strings.Contains(v.Reason, "left its cgroup") {
		t.Errorf("members remain: reason %q does not say the leader left", v.Reason)
	}
	requireRefused(t, tr.src(), id, Recycled, ErrRefused)
	move(member.pid, out) // now the worker's cgroup is empty, and everything of it runs elsewhere
	v = requireVerdict(t, tr.src(), id, Recycled)
	if !strings.Contains(v.Reason, "left its cgroup") {
		t.Errorf("empty cgroup: reason %q does not say the leader left", v.Reason)
	}
	requireRefused(t, tr.src(), id, Recycled, ErrRefused)
	p.requireAlive(t)
	member.requireAlive(t)
}

// envBigExit makes the test binary a process whose exit takes a while (a large address space to tear down):
// it touches 16 MiB, says "ready" and exits when its stdin closes.
const envBigExit = "HLAUNCH_FP_BIG_EXIT"

func bigExit() int {
	b := make([]byte, 16<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	os.Stdout.WriteString("ready\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return int(b[0]) - 1
}

// A leader that is exiting has left cgroup.procs (and, alone, emptied its cgroup) before it is a zombie:
// the verifier must say it is ending, never that it left its cgroup (recycled), which would refuse the stop
// of an adopted worker whose leader is ending under it (as TestSidecarRestartReadoption does). A bounded
// adversary loop: each round verifies, as fast as it can, a leader tearing down 16 MiB, until it reads
// exited.
func TestKernelExitingLeaderIsNotRecycled(t *testing.T) {
	requireRoot(t)
	tr := newTree(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 60 {
		w := tr.mkdir(fmt.Sprintf("w%d", round))
		dir, err := os.Open(tr.path(w))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envBigExit+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		dir.Close()
		t.Cleanup(func() { tr.kill(w) })
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("round %d: the child said %q, %v", round, line, err)
		}
		id := mustCapture(t, tr.src(), cmd.Process.Pid, w)
		stdin.Close()
		seen := map[State]int{}
		for {
			v, err := Verify(tr.src(), id)
			if err != nil {
				t.Fatalf("round %d: verify: %v", round, err)
			}
			seen[v.State]++
			if v.State == Recycled {
				t.Fatalf("round %d: the exiting leader verified as %s (%s); seen %v", round, v.State, v.Reason, seen)
			}
			if v.State == Exited {
				break
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("round %d: child: %v", round, err)
		}
	}
}
