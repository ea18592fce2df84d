package cgroup

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestV1LimitsLand checks on a hybrid or legacy host that each limit is written to its v1 file, that
// Load reads the limits back, and that Stats reads the v1 counters.
func TestV1LimitsLand(t *testing.T) {
	h := testHost(t)
	requireV1(t, h, "memory", "pids", "cpu")
	parent := testParent(t, h)
	lim := Limits{Memory: 64 << 20, MemoryHigh: 48 << 20, Pids: 50, CPUWeight: 100, CPUs: 0.5}
	g, err := h.Create(parent, "w-lim", lim)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		filepath.Join(h.V1["memory"], g.Path(), "memory.limit_in_bytes"):      strconv.Itoa(64 << 20),
		filepath.Join(h.V1["memory"], g.Path(), "memory.soft_limit_in_bytes"): strconv.Itoa(48 << 20),
		filepath.Join(h.V1["pids"], g.Path(), "pids.max"):                     "50",
		filepath.Join(h.V1["cpu"], g.Path(), "cpu.shares"):                    strconv.FormatUint(lim.cpuShares(), 10),
		filepath.Join(h.V1["cpu"], g.Path(), "cpu.cfs_quota_us"):              "50000",
		filepath.Join(h.V1["cpu"], g.Path(), "cpu.cfs_period_us"):             "100000",
	}
	for f, v := range want {
		if got := readTrim(t, f); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	if g.Limits() != lim {
		t.Errorf("Limits() = %+v", g.Limits())
	}
	l, err := h.Load(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	if l.Limits() != lim || !l.NeedsJoin() {
		t.Errorf("loaded Limits() = %+v NeedsJoin=%v", l.Limits(), l.NeedsJoin())
	}
	b, _ := json.Marshal(l.Limits())
	t.Logf("limits record: %s", b)

	c := selfCmd("held-cgroup")
	release := startIn(t, g, c)
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// The Go helper runs several threads; v1 memory does not move existing charges on join, so memory is
	// checked after the child ran (max_usage_in_bytes keeps its peak).
	if s.PidsCurrent < 1 || s.CPUUsageNS == 0 {
		t.Errorf("Stats with a member = %+v", s)
	}
	release()
	c.Wait()
	if s, err = g.Stats(); err != nil || s.MemoryPeak == 0 || s.PidsCurrent != 0 {
		t.Errorf("Stats after the member ran = %+v, %v", s, err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

// TestForkBombStopsAtPids: a shell forking 200 sleeps is refused the fork that would make Pids+1 tasks, and
// the limit counts the refusal. The shell (dash) ends at the first fork it is refused, so once it is reaped
// what is left is every task it ever started: Pids-1 sleeps.
func TestForkBombStopsAtPids(t *testing.T) {
	h := testHost(t)
	parent := testParent(t, h)
	g, err := h.Create(parent, "w-bomb", Limits{Pids: 20})
	if errors.Is(err, ErrUnsupportedLimit) {
		t.Skipf("pids limit unsupported on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := selfShell(`read x; i=0; while [ $i -lt 200 ]; do sleep 100 & i=$((i+1)); done 2>/dev/null; wait`)
	release := startIn(t, g, c)
	release()
	if err := c.Wait(); err == nil {
		t.Fatal("the shell ended its loop of 200 forks under a limit of 20 without a refused fork")
	}
	if s, _ := g.Stats(); s.PidsCurrent != 19 {
		t.Fatalf("pids.current = %d after the shell ended, want its 19 sleeps", s.PidsCurrent)
	}
	if p, _ := g.Procs(); len(p) != 19 {
		t.Fatalf("%d members after the shell ended, want its 19 sleeps", len(p))
	}
	if refused := pidsRefused(t, g); refused == 0 {
		t.Fatal("pids.events counts no fork refused at the limit")
	}
	if err := g.Kill(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryHogOOMKilled: a helper touching 1 GiB under a 32 MiB limit is OOM-killed and Stats says so.
func TestMemoryHogOOMKilled(t *testing.T) {
	h := testHost(t)
	parent := testParent(t, h)
	g, err := h.Create(parent, "w-hog", Limits{Memory: 32 << 20})
	if errors.Is(err, ErrUnsupportedLimit) {
		t.Skipf("memory limit unsupported on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := selfCmd("hog")
	release := startIn(t, g, c)
	release()
	err = c.Wait()
	if err == nil || !c.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("hog exited with %v, want killed by a signal", err)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.OOMKills < 1 || s.MemoryPeak < 16<<20 {
		t.Fatalf("Stats after OOM = %+v, want OOMKills >= 1 and a peak near the limit", s)
	}
	if err := g.WaitEmpty(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

// pidsRefused reads how many forks g's pids limit refused (pids.events max, in the v1 pids directory
// when the group has one).
func pidsRefused(t *testing.T, g *Group) uint64 {
	t.Helper()
	d := g.v1["pids"]
	if d == "" {
		d = g.v2
	}
	n, ok, err := readKey(filepath.Join(d, "pids.events"), "max")
	if err != nil || !ok {
		t.Fatalf("pids.events of %s: %v (max found: %v)", d, err, ok)
	}
	return n
}

func selfShell(script string) *exec.Cmd { return exec.Command("sh", "-c", script) }
