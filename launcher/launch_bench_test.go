package launcher_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/launcher"
)

// BenchmarkRunNone is one foreground launch of /bin/true with --scope none from inside a running process
// (the Go start-up of the CLI excluded): validate, compose the environ, fork+exec, wait.
func BenchmarkRunNone(b *testing.B) { benchRun(b, launcher.ScopeNone) }

// BenchmarkRunCgroup is BenchmarkRunNone with --scope cgroup: the worker's cgroup is created, the child is
// cloned into it (clone3 CLONE_INTO_CGROUP, the fast path) and the cgroup is removed after it exits. It
// needs root; its parent is hlaunch-bench-go-<random>, removed at the end.
func BenchmarkRunCgroup(b *testing.B) { benchRun(b, launcher.ScopeCgroup) }

func benchRun(b *testing.B, scope string) {
	root := b.TempDir()
	home := filepath.Join(root, "profiles", "b")
	if err := os.MkdirAll(filepath.Join(home, "cache", "scratch"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("B_MARKER=b\nFIRECRAWL_API_KEY=b-fc\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	spec := launcher.Spec{Profile: "b", Argv: []string{"/bin/true"}, Scope: scope}
	if scope == launcher.ScopeCgroup {
		if os.Geteuid() != 0 {
			b.Skip("needs root: --scope cgroup creates a cgroup")
		}
		if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err != nil {
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err != nil {
				b.Skip("no cgroup2 tree")
			}
		}
		spec.CgroupParent = fmt.Sprintf("hlaunch-bench-go-%08x", rand.Uint32())
		b.Cleanup(func() { removeParent(b, spec.CgroupParent) })
	}
	l, err := launcher.New(launcher.Config{Root: root, StateDir: b.TempDir(), Environ: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, err := l.Run(ctx, spec, launcher.Stdio{}, launcher.Signals{})
		if err != nil || code != 0 {
			b.Fatalf("run: code %d, %v", code, err)
		}
	}
}

// removeParent removes the benchmark's own (empty, since every Run removed its worker) parent cgroup in
// every hierarchy; it never touches anything else.
func removeParent(b *testing.B, parent string) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	dirs = append(dirs, "/sys/fs/cgroup/"+parent)
	for _, d := range dirs {
		for i := 0; i < 50; i++ {
			if err := os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := os.Stat(d); err == nil {
			b.Errorf("could not remove %s", d)
		}
	}
}
