package launcher

import (
	"context"
	"os"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// noPlacement is --scope none: a plain child, nothing made, nothing to release.
type noPlacement struct{}

func (noPlacement) mode() worker.Mode                                           { return worker.ModeNone }
func (noPlacement) cloneFD() (*os.File, error)                                  { return nil, nil }
func (noPlacement) needsHold(bool) bool                                         { return false }
func (noPlacement) place(context.Context, worker.Spec, string, int, bool) error { return nil }
func (noPlacement) cgroupPath(int) string                                       { return "" }
func (noPlacement) describe() placed                                            { return placed{} }
func (noPlacement) group() *cgroup.Group                                        { return nil }
func (noPlacement) release(context.Context)                                     {}
func (noPlacement) close()                                                      {}

// degraded is what --scope auto falls back to when neither a scope nor a raw cgroup can be made: a plain
// child as with --scope none, said once by its warning (and refused by --require-scope or limits).
type degraded struct {
	noPlacement
	warning string
}

func (degraded) mode() worker.Mode  { return worker.ModeDegraded }
func (d degraded) describe() placed { return placed{warning: d.warning} }
