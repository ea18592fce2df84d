package launcher

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// A List verifies each record against the boot id its Launcher read once (it cannot change while the
// process lives) and the machine id read once for the pass (it can be rewritten on disk: the next pass
// reads it again), not both once per record; a lone Get reads the machine id anew.
func TestListReadsBootIDOncePerLauncher(t *testing.T) {
	l := listLauncher(t, 20)
	if l.Src.BootID == nil {
		t.Fatal("New's launcher reads the boot id per verification: not kept (KeepBootID)")
	}
	host := fingerprint.Sources{}.Pinned()
	var boots, machines atomic.Int32
	l.Src = fingerprint.Sources{
		CgroupRoot: l.Src.CgroupRoot,
		BootID:     func() (string, error) { boots.Add(1); return host.BootID() },
		MachineID:  func() (string, error) { machines.Add(1); return host.MachineID() },
	}.KeepBootID()
	ctx := context.Background()
	for pass := 1; pass <= 2; pass++ {
		recs, err := l.List(ctx)
		if err != nil || len(recs) != 20 {
			t.Fatalf("List: %d records, %v", len(recs), err)
		}
		for _, r := range recs {
			if r.State != fingerprint.Exited {
				t.Fatalf("%s: %s (%s), want exited", r.ID, r.State, r.Reason)
			}
		}
		if b, m := boots.Load(), machines.Load(); b != 1 || m != int32(pass) {
			t.Errorf("after %d Lists of 20 records: boot id read %d times (want 1), machine id %d (want %d)", pass, b, m, pass)
		}
	}
	if _, err := l.Get(ctx, "w-000000000000"); err != nil {
		t.Fatal(err)
	}
	if b, m := boots.Load(), machines.Load(); b != 1 || m != 3 {
		t.Errorf("after a Get: boot id read %d times (want 1), machine id %d (want 3)", b, m)
	}
}
