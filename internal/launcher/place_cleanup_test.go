package launcher_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// A start that fails at a step after its cgroup exists leaves nothing behind: no descriptor of the
// launcher's, no worker cgroup under the parent (the one deferred cleanup of each start path).
func TestFailedStartsLeaveNothing(t *testing.T) {
	w := newWorld(t, worker.ScopeCgroup, nil)
	h, err := cgroup.Detect()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A user manager looked for in a runtime directory of the launcher's own (0700): the same on every
	// host, a systemd one included (root's system manager would answer a system-bus placement).
	rt := t.TempDir()
	if err := os.Chmod(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(rt, "bus")
	// A socket where the bus should be that hangs up on every connection: the path checks pass, so the
	// target is started held while the connect runs, and the placement fails after the child exists.
	ln, err := net.Listen("unix", none)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	noBus := newWorld(t, worker.ScopeCgroup, func(c *launcher.Config) {
		c.Environ = append(append([]string(nil), launcherEnv...), "XDG_RUNTIME_DIR="+rt, "DBUS_SYSTEM_BUS_ADDRESS=unix:path="+none, "DBUS_SESSION_BUS_ADDRESS=unix:path="+none)
	}).l
	cases := []struct {
		name string
		run  func() error
	}{
		{"detached, target not found", func() error {
			_, err := w.l.Start(ctx, worker.Spec{Profile: "b", Argv: []string{"/nonexistent/hlaunch-test-cmd"}})
			return err
		}},
		{"foreground, target not found", func() error {
			_, err := w.l.Run(ctx, worker.Spec{Profile: "b", Argv: []string{"/nonexistent/hlaunch-test-cmd"}}, worker.Stdio{}, launcher.Signals{})
			return err
		}},
		{"foreground sandboxed, the stub's target not found", func() error {
			_, err := w.l.Run(ctx, worker.Spec{Profile: "b", Sandbox: true, User: "0:0", Argv: []string{"/nonexistent/hlaunch-test-cmd"}}, worker.Stdio{}, launcher.Signals{})
			return err
		}},
		{"detached sandboxed, the shim's target not found", func() error {
			_, err := w.l.Start(ctx, worker.Spec{Profile: "b", Sandbox: true, User: "0:0", Argv: []string{"/nonexistent/hlaunch-test-cmd"}})
			return err
		}},
		{"foreground, held, placement refused (the user bus hangs up)", func() error {
			spec := worker.Spec{Profile: "b", Scope: worker.ScopeSystemd, UserManager: true, Argv: []string{"true"}}
			_, err := noBus.Run(ctx, spec, worker.Stdio{}, launcher.Signals{})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := openFDs(t)
			err := c.run()
			if err == nil {
				t.Fatal("the start succeeded")
			}
			t.Logf("failed with %v", err)
			if after := openFDs(t); after != before {
				t.Errorf("%d descriptors open before the failed start, %d after (%v)", before, after, err)
			}
			if left := workerCgroups(t, h, w.parent); len(left) > 0 {
				t.Errorf("worker cgroups left under the parent: %v (%v)", left, err)
			}
		})
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// workerCgroups lists the directories under parent in every hierarchy.
func workerCgroups(t *testing.T, h *cgroup.Host, parent string) []string {
	t.Helper()
	roots := []string{}
	if h.Unified != "" {
		roots = append(roots, h.Unified)
	}
	for _, mp := range h.V1 {
		roots = append(roots, mp)
	}
	var left []string
	for _, r := range roots {
		ents, _ := os.ReadDir(filepath.Join(r, parent))
		for _, e := range ents {
			if e.IsDir() {
				left = append(left, filepath.Join(r, parent, e.Name()))
			}
		}
	}
	return left
}
