package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDeleteNested: a worker that made cgroups below its own (in every hierarchy it is in) leaves none
// behind. While a process sits in a nested cgroup, Delete is a *PopulatedError naming where; once it is
// killed, Delete removes the nested cgroups depth-first and then the group itself.
func TestDeleteNested(t *testing.T) {
	h := testHost(t)
	requireCgroup2(t, h)
	lim := Limits{}
	if h.Mode == Hybrid && h.V1["pids"] != "" {
		lim.Pids = 100 // into the v1 pids hierarchy too
	}
	parent := testParent(t, h)
	g, err := h.Create(parent, "w-nested", lim)
	if err != nil {
		t.Fatal(err)
	}
	dirs := append([]string{g.v2}, g.v1dirs...)
	for _, d := range dirs {
		for _, sub := range []string{"a", "a/b", "a/b/c", "d"} {
			if err := os.Mkdir(filepath.Join(d, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := selfCmd("held-cgroup")
	startIn(t, g, c)
	for _, d := range dirs {
		if err := writeProcs(filepath.Join(d, "a/b/c"), c.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if pop, err := g.Populated(); err != nil || !pop {
		t.Fatalf("Populated with a member in a nested cgroup = %v, %v; want true", pop, err)
	}
	err = g.Delete()
	var pe *PopulatedError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPopulated) {
		t.Fatalf("Delete with a member in a nested cgroup = %v, want a *PopulatedError", err)
	}
	if len(pe.PIDs) != 1 || pe.PIDs[0] != c.Process.Pid {
		t.Fatalf("PopulatedError PIDs = %v, want [%d]", pe.PIDs, c.Process.Pid)
	}
	if err := g.Kill(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if err := g.Delete(); err != nil {
		t.Fatalf("Delete of an empty group with nested cgroups: %v", err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (stat: %v)", d, err)
		}
	}
	if err := h.RemoveParentIfEmpty(parent); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteNestedPopulatedV1: on a hybrid host, a member only in a nested v1 cgroup (its v2 cgroup
// empty) keeps the group populated, and Delete says so rather than removing around it.
func TestDeleteNestedPopulatedV1(t *testing.T) {
	h := testHost(t)
	requireV1(t, h, "pids")
	parent := testParent(t, h)
	g, err := h.Create(parent, "w-nested-v1", Limits{Pids: 100})
	if err != nil {
		t.Fatal(err)
	}
	c := selfCmd("held-cgroup")
	startIn(t, g, c)
	d := g.v1["pids"]
	if err := os.Mkdir(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeProcs(filepath.Join(d, "sub"), c.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if g.v2 != "" {
		// Out of the v2 group: only the nested v1 cgroup holds it now.
		if err := writeProcs(filepath.Join(filepath.Dir(g.v2)), c.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if pop, err := g.Populated(); err != nil || !pop {
		t.Fatalf("Populated with a member only in a nested v1 cgroup = %v, %v; want true", pop, err)
	}
	if err := g.Delete(); !errors.Is(err, ErrPopulated) {
		t.Fatalf("Delete = %v, want ErrPopulated", err)
	}
	if err := g.Kill(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveParentIfEmpty(parent); err != nil {
		t.Fatal(err)
	}
}
