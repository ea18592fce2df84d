package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHoldRawCgroup: a raw cgroup is held only as the worker's own marked directory under a marked parent,
// with the recorded name and cgroup id.
func TestHoldRawCgroup(t *testing.T) {
	h := testHost(t)
	requireCgroup2(t, h)
	parent := testParent(t, h)
	g, err := h.Create(parent+"/sub", "w-1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ok := Claim{Path: g.Path(), ID: g.ID(), Worker: "w-1"}
	if got, err := h.Hold(ok); err != nil || got.ID() != g.ID() || got.Dir() != g.Dir() {
		t.Fatalf("Hold(%+v) = %v, %v", ok, got, err)
	}
	if _, err := h.Hold(Claim{Path: g.Path(), Worker: "w-1"}); err != nil {
		t.Fatalf("Hold without a recorded id: %v", err)
	}
	// An unmarked directory with a marker planted on it (as a delegated user could with user.hlaunch),
	// under an unmarked parent of its own.
	foreign := filepath.Join(h.Unified, parent, "other")
	if err := os.MkdirAll(filepath.Join(foreign, "w-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mark(filepath.Join(foreign, "w-2")); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Claim{
		"another worker's name":     {Path: g.Path(), ID: g.ID(), Worker: "w-9"},
		"no worker name":            {Path: g.Path(), ID: g.ID()},
		"another cgroup id":         {Path: g.Path(), ID: g.ID() + 1, Worker: "w-1"},
		"the parent of workers":     {Path: "/" + parent + "/sub", Worker: "w-1"},
		"unmarked parent":           {Path: "/" + parent + "/other/w-2", Worker: "w-2"},
		"unmarked cgroup":           {Path: "/" + parent + "/other", Worker: "other"},
		"a top-level parent":        {Path: "/" + parent, Worker: parent},
		"not canonical":             {Path: "/" + parent + "//sub/w-1", Worker: "w-1"},
		"dot-dot":                   {Path: "/" + parent + "/sub/../sub/w-1", Worker: "w-1"},
		"scope name on a raw group": {Path: g.Path(), ID: g.ID(), Unit: "w-1", InvocationID: "x"},
	} {
		if got, err := h.Hold(c); err == nil || got != nil {
			t.Errorf("%s: Hold(%+v) = %v, %v; want a refusal", name, c, got, err)
		} else if !errors.Is(err, ErrNotOurs) && !errors.Is(err, ErrBadParent) {
			t.Errorf("%s: Hold(%+v) = %v; want ErrNotOurs or ErrBadParent", name, c, err)
		}
	}
	if err := os.Remove(filepath.Join(foreign, "w-2")); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hold(ok); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Hold of a removed worker = %v, want ErrNotFound", err)
	}
}

// TestHoldScope: a systemd scope has no marker of hlaunch's; it is held on the recorded cgroup id, unit
// name and (where the manager wrote one) InvocationID, and is never removed through the group.
func TestHoldScope(t *testing.T) {
	h := testHost(t)
	requireCgroup2(t, h)
	parent := testParent(t, h)
	if err := os.Mkdir(filepath.Join(h.Unified, parent), 0o755); err != nil {
		t.Fatal(err)
	}
	const unit, inv = "hlaunch-b-0123456789ab.scope", "0123456789abcdef0123456789abcdef"
	dir := filepath.Join(h.Unified, parent, unit)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := inode(dir)
	if err != nil {
		t.Fatal(err)
	}
	rel := "/" + parent + "/" + unit
	ok := Claim{Path: rel, ID: id, Unit: unit, InvocationID: inv}
	g, err := h.Hold(ok)
	if err != nil || g.ID() != id || g.Dir() != dir || g.Path() != rel {
		t.Fatalf("Hold(%+v) = %+v, %v", ok, g, err)
	}
	if _, err := g.Stats(); err != nil {
		t.Fatalf("Stats of a held scope: %v", err)
	}
	if err := g.Delete(); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Delete of a held scope = %v, want ErrNotOurs", err)
	}
	if _, err := os.Lstat(dir); err != nil {
		t.Fatalf("the scope's directory went: %v", err)
	}
	refuse := map[string]Claim{
		"another cgroup id":      {Path: rel, ID: id + 1, Unit: unit, InvocationID: inv},
		"no cgroup id":           {Path: rel, Unit: unit, InvocationID: inv},
		"no InvocationID":        {Path: rel, ID: id, Unit: unit},
		"another unit":           {Path: rel, ID: id, Unit: "other.scope", InvocationID: inv},
		"not a scope":            {Path: rel, ID: id, Unit: "hlaunch-b.service", InvocationID: inv},
		"the slice above":        {Path: "/" + parent, ID: id, Unit: parent, InvocationID: inv},
		"a path around the unit": {Path: "/" + parent + "/x/../" + unit, ID: id, Unit: unit, InvocationID: inv},
	}
	for name, c := range refuse {
		if got, err := h.Hold(c); !errors.Is(err, ErrNotOurs) && !errors.Is(err, ErrBadParent) || got != nil {
			t.Errorf("%s: Hold(%+v) = %v, %v; want ErrNotOurs or ErrBadParent", name, c, got, err)
		}
	}
	// Where the manager records the InvocationID on the directory (a system manager does), it must match.
	if err := unix.Setxattr(dir, invocationTrusted, []byte("ffffffffffffffffffffffffffffffff"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hold(ok); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Hold with another invocation's xattr = %v, want ErrNotOurs", err)
	}
	if err := unix.Setxattr(dir, invocationTrusted, []byte(inv), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hold(ok); err != nil {
		t.Fatalf("Hold with the recorded invocation's xattr: %v", err)
	}
	// A scope removed and re-made at the same path is another cgroup.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Hold(ok); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Hold of a re-made scope = %v, want ErrNotOurs", err)
	}
}
