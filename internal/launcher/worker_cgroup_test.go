package launcher_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A worker's limits are in force in its own cgroup, read from inside it (v1 pids hierarchy on a hybrid
// host, the v2 tree on a pure one).
func TestRunLimitsSeenByWorker(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	s := spec(`p=$(grep -E '^[0-9]+:pids:' /proc/self/cgroup | cut -d: -f3)
if [ -n "$p" ]; then cat /sys/fs/cgroup/pids$p/pids.max; else p=$(grep '^0::' /proc/self/cgroup | cut -d: -f3); cat /sys/fs/cgroup$p/pids.max; fi`)
	s.Limits = cgroup.Limits{Pids: 7}
	code, out, err := w.run(s, launcher.Signals{})
	if err != nil || code != 0 || strings.TrimSpace(out) != "7" {
		t.Fatalf("code %d, %v: the worker reads pids.max %q, want 7", code, err, out)
	}
}

// The cgroups hlaunch made are known as its own (the sidecar refuses peers inside one); others are not.
func TestMarkedCgroup(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	dir := t.TempDir()
	rc := w.start(spec(`echo up > ` + dir + `/up; while :; do sleep 0.05; done`))
	waitFile(t, dir+"/up")
	got, err := w.l.MarkedCgroup(rc.Cgroup)
	if err != nil || got == "" || !strings.HasPrefix(rc.Cgroup, got) {
		t.Errorf("MarkedCgroup(%s) = %q, %v; want it or a parent of it", rc.Cgroup, got, err)
	}
	if got, err := w.l.MarkedCgroup("/"); err != nil || got != "" {
		t.Errorf("MarkedCgroup(/) = %q, %v; want none", got, err)
	}
}

// An empty worker cgroup that no record names (a slot whose shim died, a foreground hlaunch that was
// SIGKILLed) is collected once older than OrphanAge; a younger one is left for a launch in flight.
func TestGCOrphanCgroup(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	ctx := context.Background()
	slot, err := w.l.NewWarm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	cg := filepath.Join(w.v2(), w.parent, slot.ID())
	testutil.KillCgroup(cg) // the slot's shim dies: its cgroup is empty, and no record names it
	deadline := time.Now().Add(30 * time.Second)
	for !testutil.CgroupEmpty(cg) {
		if time.Now().After(deadline) {
			t.Fatal("the slot's cgroup never emptied")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rep, err := w.l.GC(ctx, launcher.Retention{OrphanAge: time.Hour})
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc with a young orphan: %+v, %v; want it left", rep, err)
	}
	rep, err = w.l.GC(ctx, launcher.Retention{OrphanAge: 0, KeepParent: true})
	if err != nil || !slices.Equal(rep.Removed, []string{slot.ID()}) {
		t.Fatalf("gc: %+v, %v; want the orphan %s removed", rep, err, slot.ID())
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("the orphan cgroup is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.v2(), w.parent)); err != nil {
		t.Errorf("KeepParent: the parent went: %v", err)
	}
	if d := launcher.DefaultRetention(); d.Keep != 1000 || d.OrphanAge != 3*time.Minute || d.KeepParent {
		t.Errorf("DefaultRetention() = %+v", d)
	}
}
