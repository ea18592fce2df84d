package cgroup

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hlaunch/hlaunch/internal/proc"
)

// A child forked from a thread that entered the group (proc.Command.Cgroups) is in every v1 hierarchy of
// the group from its start, without being joined by PID; the forking thread has left the group by the
// time Spawn returns (the group's v1 `tasks` hold the child's threads and none of ours), so the group is
// removed as soon as the child is reaped; and our thread, parked in the parent until the child's reap (it
// has a parent-death signal), is gone from the parent when Wait returns.
func TestEnterThreadPlacesForkedChild(t *testing.T) {
	h := testHost(t)
	requireV1(t, h, "pids", "memory")
	parent := testParent(t, h)
	g, err := h.Create(parent, randName("w-"), Limits{Memory: 256 << 20, Pids: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !g.NeedsJoin() {
		t.Fatalf("group %s has no v1 directory", g.Path())
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if g.v2 != "" {
		fd, err := g.OpenFD()
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		attr.UseCgroupFD = true
		attr.CgroupFD = int(fd.Fd())
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := proc.Spawn(proc.Command{
		Path: os.Args[0], Args: []string{os.Args[0], "-test.run=^TestHelperProcess$"},
		Env:   append(os.Environ(), helperEnv+"=held-cgroup"),
		Files: []*os.File{inR, outW, outW}, Sys: attr, Cgroups: g,
	})
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		if !reaped {
			_ = p.Signal(syscall.SIGKILL)
			_, _ = p.Wait()
		}
	}()

	ours := tids(t, "/proc/self/task")
	for _, d := range g.v1dirs {
		for _, tid := range readTasks(t, d) {
			if ours[tid] {
				t.Errorf("%s/tasks holds thread %d of the launching process", d, tid)
			} else if _, err := os.Stat("/proc/" + strconv.Itoa(p.Pid) + "/task/" + strconv.Itoa(tid)); err != nil {
				t.Errorf("%s/tasks holds thread %d, not one of the child's", d, tid)
			}
		}
	}

	inW.Close() // the helper prints /proc/self/cgroup and exits
	out, err := io.ReadAll(outR)
	if err != nil {
		t.Fatal(err)
	}
	got := cgroupLines(string(out))
	for _, c := range []string{"pids", "memory"} {
		if got[c] != g.Path() {
			t.Errorf("child's %s cgroup %q, want %q (output %q)", c, got[c], g.Path(), out)
		}
	}
	if g.v2 != "" && got[""] != g.Path() {
		t.Errorf("child's v2 cgroup %q, want %q", got[""], g.Path())
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	reaped = true
	if err := g.Delete(); err != nil {
		t.Errorf("Delete after the child's reap: %v", err)
	}
	// The parked thread ended when the child was reaped, and Wait waited for it: the parent's cleanup
	// kills what is in it, so none of our threads may be left there.
	ours = tids(t, "/proc/self/task")
	for _, d := range g.v1dirs {
		for _, tid := range readTasks(t, filepath.Dir(d)) {
			if ours[tid] {
				t.Fatalf("%s/tasks still holds our thread %d after the child's Wait", filepath.Dir(d), tid)
			}
		}
	}
}

func tids(t *testing.T, dir string) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]bool{}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			m[n] = true
		}
	}
	return m
}

func readTasks(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s/tasks: %q", dir, f)
		}
		out = append(out, n)
	}
	return out
}
