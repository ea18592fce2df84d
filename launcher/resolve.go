package launcher

import "fmt"

// resolve checks spec as the caller wrote it, then fills what it leaves empty from the launcher's defaults
// (Config.Defaults: the sidecar's or the CLI's placement flags). Checking the caller's own spec first means
// an error names a field the caller sent, never one a default added (`hlaunch sidecar --net none` used to
// refuse every unsandboxed spawn with "--net none needs --sandbox").
func (l *Launcher) resolve(spec Spec, detach bool) (Spec, error) {
	spec.Detach = detach
	if err := spec.Validate(); err != nil {
		return Spec{}, err
	}
	d := l.cfg.Defaults
	if d.RequireScope && spec.Scope == ScopeNone {
		return Spec{}, fmt.Errorf("%w: scope %q: this launcher requires a restart-safe placement for every worker (its --require-scope)", ErrInvalid, spec.Scope)
	}
	spec = spec.withDefaults(d)
	if err := spec.Validate(); err != nil {
		return Spec{}, fmt.Errorf("with the launcher's defaults: %w", err)
	}
	return spec, nil
}
