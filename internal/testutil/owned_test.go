package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSweepStale: of the directories a sweep finds, it removes only those whose owner no longer runs - a
// child this test started and reaped, and this PID with another start time (a recycled PID) - and keeps
// those of live owners (this process, a child that still runs) and a name without an owner tag.
func TestSweepStale(t *testing.T) {
	base := t.TempDir()
	const prefix = "hlaunch-itest-"
	tagOf := func(pid int) string {
		st, err := readStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(pid) + "-" + strconv.FormatUint(st.Start, 10)
	}
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	deadTag := tagOf(dead.Process.Pid) // a zombie until reaped: its stat is still readable
	if err := dead.Wait(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	own, err := OwnedTempDir(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	ownStart, _ := readStat(os.Getpid())
	recycled := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(ownStart.Start+1, 10)
	mk := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := []string{mk(prefix + deadTag + "-1"), mk(prefix + recycled + "-2")}
	kept := []string{own, mk(prefix + tagOf(live.Process.Pid) + "-3"), mk(prefix + "123456789"), mk("other-" + deadTag + "-4")}
	removed, err := SweepStale(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	slices.Sort(stale)
	if !slices.Equal(removed, stale) {
		t.Errorf("SweepStale removed %q, want %q", removed, stale)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s of a dead owner is still there (%v)", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// TestOwnerOf parses only names that are the prefix, a PID, a start time and a further part.
func TestOwnerOf(t *testing.T) {
	for name, ok := range map[string]bool{
		"p-12-345-x": true, "p-12-345-": false, "p-12-345": false, "p-012-345-x": false, "p--12-345-x": false,
		"p-0-345-x": false, "p-12-+345-x": false, "q-12-345-x": false, "p-abc-345-x": false,
	} {
		if _, _, got := OwnerOf(name, "p-"); got != ok {
			t.Errorf("OwnerOf(%q) ok = %v, want %v", name, got, ok)
		}
	}
	if pid, start, _ := OwnerOf("p-12-345-x", "p-"); pid != 12 || start != 345 {
		t.Errorf("OwnerOf = %d, %d, want 12, 345", pid, start)
	}
}

// TestSweepStaleCgroups: a cgroup parent of a reaped test process is removed, the worker still running in
// it (under a child cgroup) killed first; a live owner's parent stays.
func TestSweepStaleCgroups(t *testing.T) {
	RequireRoot(t, "it creates cgroups")
	v2 := Cgroup2(t)
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := readStat(dead.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.Wait(); err != nil {
		t.Fatal(err)
	}
	stale := RandName(CgroupParentPrefix + strconv.Itoa(dead.Process.Pid) + "-" + strconv.FormatUint(st.Start, 10) + "-")
	live, err := OwnedName(CgroupParentPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, live} {
		t.Cleanup(func() {
			if err := RemoveCgroups(p); err != nil {
				t.Error(err)
			}
		})
		if err := os.MkdirAll(filepath.Join(v2, p, "w"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := os.Open(filepath.Join(v2, stale, "w"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	worker := exec.Command("sleep", "60")
	worker.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(w.Fd())}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- worker.Wait() }()
	reaped := false
	defer func() {
		if !reaped {
			_ = worker.Process.Kill()
			<-ended
		}
	}()
	removed, err := SweepStaleCgroups(CgroupParentPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, filepath.Join(v2, stale)) {
		t.Errorf("SweepStaleCgroups removed %q, not the dead owner's %s", removed, stale)
	}
	if _, err := os.Stat(filepath.Join(v2, stale)); !os.IsNotExist(err) {
		t.Errorf("the dead owner's cgroup %s is still there (%v)", stale, err)
	}
	if _, err := os.Stat(filepath.Join(v2, live, "w")); err != nil {
		t.Errorf("the live owner's cgroup %s was removed: %v", live, err)
	}
	// sleep 60 does not end on its own within the 10 s given here: only the sweep's kill ends it so soon.
	select {
	case <-ended:
		reaped = true
	case <-time.After(10 * time.Second):
		t.Errorf("the worker in the dead owner's cgroup still runs")
	}
}
