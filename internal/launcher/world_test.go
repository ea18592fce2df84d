package launcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// world is an in-process Launcher for tests of behaviour: a temporary hermes root with profiles a and b, a
// state directory of its own, and (for the cgroup modes) a cgroup parent of the test's own, removed after
// with everything in it. Every detached worker a test starts is stopped, and its shim waited for, at the end.
type world struct {
	t      *testing.T
	l      *launcher.Launcher
	root   string
	state  string
	parent string // "" for a world without cgroups
	stderr *testutil.Buffer
	mu     sync.Mutex
	rcs    []*worker.Receipt
}

// launcherEnv is the launcher's own environ: launch profile A's names, and ambient credentials that must
// never reach a worker of B.
var launcherEnv = []string{"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", "A_MARKER=a", "FIRECRAWL_API_KEY=a-fc", "OPENAI_API_KEY=ambient"}

// newWorld makes a world whose launches default to scope (cgroup: under the world's own parent).
func newWorld(t *testing.T, scope worker.Scope, edit func(*launcher.Config)) *world {
	t.Helper()
	w := &world{t: t, stderr: &testutil.Buffer{}}
	w.root = testutil.HermesRoot(t, map[string]string{
		"a": "A_MARKER=a\nFIRECRAWL_API_KEY=a-fc\n",
		"b": "B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\nGH_TOKEN=b-gh-tier1\n",
	})
	w.state = filepath.Join(t.TempDir(), "state")
	cfg := launcher.Config{Root: w.root, StateDir: w.state, Environ: launcherEnv, Stderr: w.stderr,
		Defaults: worker.Spec{Scope: scope}}
	if scope == worker.ScopeCgroup {
		w.parent = testutil.CgroupParent(t)
		cfg.Defaults.CgroupParent = w.parent
	}
	if edit != nil {
		edit(&cfg)
	}
	l, err := launcher.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.l = l
	// Registered after CgroupParent's cleanup, so it runs first: workers end before their cgroups go.
	t.Cleanup(w.cleanup)
	return w
}

// cleanup stops every worker the test started and waits until its shim is gone (the launcher reaps it in
// a goroutine, which the leak check would otherwise find).
func (w *world) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.mu.Lock()
	rcs := w.rcs
	w.mu.Unlock()
	for _, rc := range rcs {
		if _, err := w.l.Stop(ctx, rc.ID, time.Second); err != nil && !errors.Is(err, worker.ErrNotFound) {
			w.t.Errorf("stop %s: %v", rc.ID, err)
		}
		if !shimGone(ctx, rc) {
			w.t.Errorf("shim %d of %s still there", rc.ShimPID, rc.ID)
		}
	}
	_ = w.l.Close()
}

// shimGone waits until a worker's shim has exited and been reaped (it leaves its exit cgroup then).
func shimGone(ctx context.Context, rc *worker.Receipt) bool {
	for rc.ShimPID > 0 && syscall.Kill(rc.ShimPID, 0) == nil {
		if ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// waitShim waits until the worker's shim is gone: the shim is the last of a worker to leave its parent.
func (w *world) waitShim(rc *worker.Receipt) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !shimGone(ctx, rc) {
		w.t.Fatalf("shim %d of %s still there", rc.ShimPID, rc.ID)
	}
}

// spec is a launch of profile b running sh -c script.
func spec(script string) worker.Spec {
	return worker.Spec{Profile: "b", Argv: []string{"/bin/sh", "-c", script}}
}

// run runs s in the foreground with the child's stdout and stderr to a file, and returns its exit code,
// error and output.
func (w *world) run(s worker.Spec, sigs launcher.Signals) (int, string, error) {
	w.t.Helper()
	out, err := os.CreateTemp(w.t.TempDir(), "out")
	if err != nil {
		w.t.Fatal(err)
	}
	defer out.Close()
	code, err := w.l.Run(context.Background(), s, worker.Stdio{Stdout: out, Stderr: out}, sigs)
	b, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		w.t.Fatal(rerr)
	}
	return code, string(b), err
}

// start starts s detached and remembers it for the cleanup.
func (w *world) start(s worker.Spec) *worker.Receipt {
	w.t.Helper()
	s.Detach = true
	rc, err := w.l.Start(context.Background(), s)
	if err != nil {
		w.t.Fatalf("start: %v\nstderr: %s", err, w.stderr.String())
	}
	w.remember(rc)
	return rc
}

func (w *world) remember(rc *worker.Receipt) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rcs = append(w.rcs, rc)
}

// wait waits for a worker's final record.
func (w *world) wait(ref string) worker.Record {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec, err := w.l.Wait(ctx, ref)
	if err != nil {
		w.t.Fatalf("wait %s: %v", ref, err)
	}
	return rec
}

// v2 is the cgroup2 mount point.
func (w *world) v2() string { return testutil.Cgroup2(w.t) }

// workerCgroups lists the worker cgroups left under the world's parent in the v2 tree.
func (w *world) workerCgroups() []string {
	w.t.Helper()
	ents, err := os.ReadDir(filepath.Join(w.v2(), w.parent))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "w-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitFile waits until path exists and returns its contents.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// envOf parses `env` output into a map.
func envOf(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}
