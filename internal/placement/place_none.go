package placement

import (
	"context"
	"os"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// NoPlacement is --scope none: a plain child, nothing made, nothing to release.
type NoPlacement struct{}

// Mode is ModeNone.
func (NoPlacement) Mode() worker.Mode { return worker.ModeNone }

// CloneFD is nil: the child is not cloned into a cgroup.
func (NoPlacement) CloneFD() (*os.File, error) { return nil, nil }

// NeedsHold is false: there is nothing to wait for.
func (NoPlacement) NeedsHold(bool) bool { return false }

// Place does nothing.
func (NoPlacement) Place(context.Context, worker.Spec, string, int, bool) error { return nil }

// CgroupPath is "": no cgroup of its own.
func (NoPlacement) CgroupPath(int) string { return "" }

// Describe says nothing.
func (NoPlacement) Describe() Placed { return Placed{} }

// Group is nil.
func (NoPlacement) Group() *cgroup.Group { return nil }

// Release has nothing to undo.
func (NoPlacement) Release(context.Context) {}

// Close holds nothing.
func (NoPlacement) Close() {}

// degraded is what --scope auto falls back to when neither a scope nor a raw cgroup can be made: a plain
// child as with --scope none, said once by its warning (and refused by --require-scope or limits).
type degraded struct {
	NoPlacement
	warning string
}

func (degraded) Mode() worker.Mode  { return worker.ModeDegraded }
func (d degraded) Describe() Placed { return Placed{Warning: d.warning} }
