package cgroup

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLegacyView runs the suite on this machine's v1 hierarchies alone, as a v1-only host would: no v2
// directory, the freezer as primary, JoinAll for placement, and Kill's freeze-SIGKILL-thaw fallback.
func TestLegacyView(t *testing.T) {
	host := testHost(t)
	requireV1(t, host, "freezer", "pids", "memory")
	var notes atomic.Int32
	h := &Host{Mode: Legacy, V1: host.V1, Logf: func(f string, a ...any) { notes.Add(1) }}

	t.Run("placement", func(t *testing.T) {
		parent := testParent(t, h)
		g, err := h.Create(parent, "w", Limits{Pids: 100})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.OpenFD(); !errors.Is(err, ErrNoUnified) {
			t.Fatalf("OpenFD on legacy = %v, want ErrNoUnified", err)
		}
		if !g.NeedsJoin() || g.Dir() != g.v1["freezer"] {
			t.Fatalf("NeedsJoin=%v Dir=%s", g.NeedsJoin(), g.Dir())
		}
		c := selfCmd("held-cgroup")
		var out strings.Builder
		c.Stdout = &out
		release := startIn(t, g, c)
		release()
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		lines := cgroupLines(out.String())
		for _, k := range []string{"freezer", "pids"} {
			if lines[k] != g.Path() {
				t.Errorf("%s cgroup = %q, want %q", k, lines[k], g.Path())
			}
		}
		if err := g.Delete(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("kill-tree-fallback", func(t *testing.T) { checkKillTree(t, h, Limits{}) })
	t.Run("kill-forbidden", func(t *testing.T) {
		strict := &Host{Mode: Legacy, V1: host.V1, NoKillFallback: true}
		parent := testParent(t, strict)
		g, err := strict.Create(parent, "w", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Kill(ctxT(t, 0)); !errors.Is(err, ErrFallbackForbidden) {
			t.Fatalf("Kill with fallback forbidden = %v", err)
		}
		if err := g.Delete(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("signal", func(t *testing.T) { checkSignal(t, h, Limits{}) })
	t.Run("refusals", func(t *testing.T) { checkRefusals(t, h) })
	t.Run("memory-unsupported-without-hierarchy", func(t *testing.T) {
		v1 := map[string]string{"freezer": host.V1["freezer"]}
		bare := &Host{Mode: Legacy, V1: v1}
		if _, err := bare.Create(randName("hlaunch-test-"), "w", Limits{Memory: 1 << 20}); !errors.Is(err, ErrUnsupportedLimit) {
			t.Fatalf("memory limit without a memory hierarchy = %v", err)
		}
	})
	if n := notes.Load(); n != 1 {
		t.Errorf("fallback noted %d times, want once per Host", n)
	}
}
