package launcher_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// Doctor on this host: the cgroup layout it found, the v2 mount, and an auto choice with its reason.
func TestDoctorReportsHost(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	r, err := w.l.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.CgroupMode == "" || r.CgroupMode == "none" || r.Mounts["unified"] != w.v2() {
		t.Errorf("doctor: mode %q, mounts %v; want the host's v2 tree %s", r.CgroupMode, r.Mounts, w.v2())
	}
	if r.AutoChoice == "" || r.AutoReason == "" || !r.Pidfd {
		t.Errorf("doctor: auto %q (%q), pidfd %v", r.AutoChoice, r.AutoReason, r.Pidfd)
	}
	if _, err := os.Stat(filepath.Join(w.v2(), w.parent)); !os.IsNotExist(err) {
		t.Errorf("doctor created the cgroup parent: %v", err)
	}
}

// --scope auto places the worker as doctor says it would (one decision): a cgroup on a host whose
// system manager does not answer, a scope on one whose manager does.
func TestAutoPlacementIsDoctorsChoice(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	r, err := w.l.Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := spec("sleep 1000")
	s.Scope, s.CgroupParent = worker.ScopeAuto, w.parent
	rc := w.start(s)
	if rc.Mode != r.AutoChoice {
		t.Errorf("auto placed the worker %s, doctor says auto is %s (%s)", rc.Mode, r.AutoChoice, r.AutoReason)
	}
	if rec, err := w.l.Stop(context.Background(), rc.ID, time.Second); err != nil || rec.State != "exited" {
		t.Errorf("stop: %+v, %v", rec, err)
	}
}
