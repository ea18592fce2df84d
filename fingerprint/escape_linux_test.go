package fingerprint

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// A leader that moves itself out of its cgroup (an unsandboxed root worker can write cgroupfs) is never
// taken for an exited worker, nor signalled: whether members remain or the cgroup is empty, the verdict is
// recycled and its reason says the leader left. On the old code the empty cgroup read as "the PID now
// names another process" with the same start tick twice.
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
