package launcher

import (
	"runtime"
	"testing"

	"github.com/hlaunch/hlaunch/internal/affinity"
)

// helperCPUs: an unpinned launcher starts a shim on one CPU of its own set and gives the worker its
// whole set; a pinned one (ChildCPUs set) lets the shim inherit the pin and gives the worker ChildCPUs.
func TestHelperCPUs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := affinity.Current()
	if err != nil {
		t.Fatal(err)
	}
	l := &Launcher{}
	pin, cpus := l.helperCPUs()
	switch {
	case own.Count() < 2 && (!pin.IsZero() || !cpus.IsZero()):
		t.Errorf("one CPU: pin %q, cpus %q; want neither (nothing to gain or restore)", pin, cpus)
	case own.Count() >= 2 && (pin.Count() != 1 || !cpus.Equal(own)):
		t.Errorf("unpinned launcher: pin %q, cpus %q; want one CPU of %q and %q itself", pin, cpus, own, own)
	}
	want, err := affinity.Parse("0")
	if err != nil {
		t.Fatal(err)
	}
	l.cfg.ChildCPUs = want
	if pin, cpus := l.helperCPUs(); !pin.IsZero() || !cpus.Equal(want) {
		t.Errorf("pinned launcher: pin %q, cpus %q; want none and %q", pin, cpus, want)
	}
}
