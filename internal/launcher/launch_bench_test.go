package launcher_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// BenchmarkRunNone is one foreground launch of /bin/true with --scope none from inside a running process
// (the Go start-up of the CLI excluded): validate, compose the environ, fork+exec, wait.
func BenchmarkRunNone(b *testing.B) { benchRun(b, worker.ScopeNone) }

// BenchmarkRunCgroup is BenchmarkRunNone with --scope cgroup: the worker's cgroup is created, the child is
// cloned into it (clone3 CLONE_INTO_CGROUP, the fast path) and the cgroup is removed after it exits. It
// needs root; its parent is the benchmark's own (testutil.CgroupParent), removed at the end.
func BenchmarkRunCgroup(b *testing.B) { benchRun(b, worker.ScopeCgroup) }

func benchRun(b *testing.B, scope worker.Scope) {
	root := testutil.HermesRoot(b, map[string]string{"b": "B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\n"})
	if err := os.MkdirAll(filepath.Join(root, "profiles", "b", "cache", "scratch"), 0o755); err != nil {
		b.Fatal(err)
	}
	spec := worker.Spec{Profile: "b", Argv: []string{"/bin/true"}, Scope: scope}
	if scope == worker.ScopeCgroup {
		// Its own parent, hlaunch-test-<random>, removed at the end with whatever is left in it.
		spec.CgroupParent = testutil.CgroupParent(b)
	}
	l, err := launcher.New(launcher.Config{Root: root, StateDir: b.TempDir(), Environ: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, err := l.Run(ctx, spec, worker.Stdio{}, launcher.Signals{})
		if err != nil || code != 0 {
			b.Fatalf("run: code %d, %v", code, err)
		}
	}
}
