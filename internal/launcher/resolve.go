package launcher

import (
	"fmt"

	"github.com/hlaunch/hlaunch/internal/worker"
)

// ShimTasks is how many of a detached worker's --pids its shim may use: the shim is a Go process in the
// worker's cgroup, and pids.max counts its threads (ADR 0005 gives how many). A
// detached --pids at or below it is refused, so that the limit never fails the command's first fork with
// an error that blames the command.
const ShimTasks = 8

// resolve checks spec as the caller wrote it, then fills what it leaves empty from the launcher's defaults
// (Config.Defaults: the sidecar's or the CLI's placement flags). Checking the caller's own spec first means
// an error names a field the caller sent, never one a default added (`hlaunch sidecar --net none` must not
// refuse an unsandboxed spawn with "--net none needs --sandbox").
func (l *Launcher) resolve(spec worker.Spec, detach bool) (worker.Spec, error) {
	spec.Detach = detach
	if err := spec.Validate(); err != nil {
		return worker.Spec{}, err
	}
	if detach && spec.Limits.Pids > 0 && spec.Limits.Pids <= ShimTasks {
		return worker.Spec{}, fmt.Errorf("%w: --pids %d: a detached worker's shim lives in its cgroup and its threads (up to %d) count against --pids; give at least %d", worker.ErrInvalid, spec.Limits.Pids, ShimTasks, ShimTasks+1)
	}
	d := l.cfg.Defaults
	if d.RequireScope && spec.Scope == worker.ScopeNone {
		return worker.Spec{}, fmt.Errorf("%w: scope %q: this launcher requires a restart-safe placement for every worker (its --require-scope)", worker.ErrInvalid, spec.Scope)
	}
	spec = spec.WithDefaults(d)
	if err := spec.Validate(); err != nil {
		return worker.Spec{}, fmt.Errorf("with the launcher's defaults: %w", err)
	}
	return spec, nil
}
