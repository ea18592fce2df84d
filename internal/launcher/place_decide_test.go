package launcher

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// placeTestLauncher is an in-process Launcher with an empty hermes root, defaulting to raw cgroups under
// parent, and no manager reachable: the bus addresses point at nothing, so --scope auto's answer is
// decided by the cgroup parent alone (on a host whose system manager listens on its private socket both
// sides see it too, and still must agree).
func placeTestLauncher(t *testing.T, h *cgroup.Host, parent string) *Launcher {
	t.Helper()
	root := filepath.Join(t.TempDir(), "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "no-bus")
	l, err := New(Config{
		Root: root, StateDir: filepath.Join(t.TempDir(), "state"),
		Environ:  []string{"PATH=/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + none, "DBUS_SESSION_BUS_ADDRESS=unix:path=" + none, "XDG_RUNTIME_DIR=" + none},
		Defaults: worker.Spec{CgroupParent: parent},
		Stderr:   testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Cgroups = h
	return l
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Logf("%s", b); return len(b), nil }

// hostViews are the layouts a placement test runs on: this host's, and where it has v1 hierarchies
// with a freezer beside its v2 tree (a hybrid host), the same hierarchies seen as a legacy host's (no v2
// tree): real cgroupfs either way.
func hostViews(h *cgroup.Host) map[string]*cgroup.Host {
	views := map[string]*cgroup.Host{string(h.Mode): h}
	if h.Unified != "" && h.V1["freezer"] != "" {
		views[string(cgroup.Legacy)] = &cgroup.Host{Mode: cgroup.Legacy, V1: h.V1}
	}
	return views
}

// placeTestHost is the host's cgroup layout for a test that makes cgroups (root only).
func placeTestHost(t *testing.T) *cgroup.Host {
	t.Helper()
	testutil.RequireRoot(t, "creating cgroups")
	h, err := cgroup.Detect()
	if err != nil {
		t.Fatalf("no cgroup hierarchy: %v", err)
	}
	return h
}

// hierarchies are the roots of every mounted cgroup hierarchy (v2 and each v1 mount once).
func hierarchies(h *cgroup.Host) []string {
	seen := map[string]bool{}
	var roots []string
	if h.Unified != "" {
		seen[h.Unified] = true
		roots = append(roots, h.Unified)
	}
	for _, mp := range h.V1 {
		if !seen[mp] {
			seen[mp] = true
			roots = append(roots, mp)
		}
	}
	sort.Strings(roots)
	return roots
}

func randParent(*testing.T) string { return testutil.RandName("hlaunch-test-decide-") }

// Doctor's --scope auto answer is the launch's: a parent that exists without hlaunch's marker, in any
// one hierarchy, is refused by both or by neither. A doctor that checked the parent
// in one hierarchy (the v2 tree, or the first v1 mount by name) while the launch makes it in the
// hierarchies its limits need (the freezer on a legacy host) would say "cgroup" where the launch
// degrades, or the other way round.
func TestDoctorAndLaunchAgreeOnAuto(t *testing.T) {
	h := placeTestHost(t)
	ctx := context.Background()
	check := func(t *testing.T, l *Launcher, why string) {
		t.Helper()
		rep, err := l.Doctor(ctx)
		if err != nil {
			t.Fatal(err)
		}
		spec := worker.Spec{}.WithDefaults(l.cfg.Defaults)
		p, err := l.Prepare(ctx, spec, worker.NewWorkerID())
		got := worker.Mode("error: ")
		if err != nil {
			got += worker.Mode(err.Error())
		} else {
			got = p.Mode()
			p.Release(ctx)
		}
		if got != rep.AutoChoice {
			t.Errorf("%s: doctor says --scope auto gives %s (%s; delegated %+v), a launch got %s", why, rep.AutoChoice, rep.AutoReason, rep.Delegated, got)
		}
	}
	for kind, view := range hostViews(h) {
		t.Run(kind+"/fresh parent", func(t *testing.T) {
			parent := randParent(t)
			t.Cleanup(func() { removeParent(t, h, parent) })
			check(t, placeTestLauncher(t, view, parent), "a parent that does not exist yet")
		})
		for _, root := range hierarchies(view) {
			t.Run(kind+"/unmarked in "+filepath.Base(root), func(t *testing.T) {
				parent := randParent(t)
				dir := filepath.Join(root, parent)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { removeParent(t, h, parent) })
				check(t, placeTestLauncher(t, view, parent), "parent unmarked in "+root)
			})
		}
	}
}

// removeParent removes a test's parent (and any worker left under it) from every hierarchy.
func removeParent(t *testing.T, h *cgroup.Host, parent string) {
	for _, root := range hierarchies(h) {
		dir := filepath.Join(root, parent)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			t.Errorf("remove test parent: %v", err)
		}
	}
}
