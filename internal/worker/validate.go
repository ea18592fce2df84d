package worker

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

// MaxKeyBytes bounds a --key: hermes' keys (cron-<job>-exec-<execution>, kanban-<task>-run-<run>) are
// tens of bytes, and the retention counts records, not bytes.
const MaxKeyBytes = 256

// DefaultGrace is the time between SIGTERM and the whole-cgroup kill when a Spec names none.
const DefaultGrace = 5 * time.Second

// Validate checks spec once, before anything is created. Every error wraps ErrInvalid and names the flag
// (or spec field) at fault. The checks run in a fixed order, a group at a time, so that a spec with several
// faults is always told the same first one.
func (s *Spec) Validate() error {
	for _, check := range []func() error{s.checkCommand, s.checkPlacement, s.checkSandbox, s.checkIdentity, s.checkLifetime, s.checkOutput} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkCommand: the profile, the command, and what of the launcher's credentials it gets.
func (s *Spec) checkCommand() error {
	if strings.TrimSpace(s.Profile) == "" {
		return badField("-p/--profile is required")
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return badField("no command given (hlaunch exec -p NAME -- CMD [ARGS...])")
	}
	if _, err := ParseSecrets(string(s.Secrets)); err != nil {
		return err
	}
	if len(s.Pass) > 0 && s.Secrets != SecretsNone {
		return badField("--pass only makes sense with --secrets none")
	}
	return nil
}

// checkPlacement: the scope, what it can hold (limits, a unit or slice), and the raw cgroup's parent.
func (s *Spec) checkPlacement() error {
	if err := CheckScope(string(s.Scope)); err != nil {
		return err
	}
	if s.Scope == ScopeNone && HasLimit(s.Limits) {
		return badField("limits (--memory, --pids, ...) need --scope cgroup, systemd or auto")
	}
	if s.Scope == ScopeNone && s.RequireScope {
		return badField("--require-scope contradicts --scope none")
	}
	if (s.Unit != "" || s.Slice != "") && (s.Scope == ScopeCgroup || s.Scope == ScopeNone) {
		return badField("--unit and --slice need --scope systemd or auto")
	}
	if err := CheckLimits(s.Limits); err != "" {
		return badField("%s", err)
	}
	return CheckCgroupParent(s.CgroupParent)
}

// checkSandbox: the options only a sandbox has (its network, its filter, its writable paths).
func (s *Spec) checkSandbox() error {
	if _, err := ParseNet(string(s.Net)); err != nil {
		return err
	}
	if s.Net == NetNone && !s.Sandbox {
		return badField("--net none needs --sandbox")
	}
	if _, err := ParseSeccomp(string(s.Seccomp)); err != nil {
		return err
	}
	if s.Seccomp != "" && !s.Sandbox {
		return badField("--seccomp needs --sandbox (the filter is part of the sandbox)")
	}
	if len(s.RW) > 0 && !s.Sandbox {
		return badField("--rw needs --sandbox")
	}
	return nil
}

// checkIdentity: who the worker runs as (--as), and the terminal a sandboxed foreground worker is given.
func (s *Spec) checkIdentity() error {
	if s.User != "" {
		if _, _, err := ParseUser(s.User); err != nil {
			return badField("--as %q: %v", s.User, err)
		}
	}
	if s.TTYTitles && (!s.Sandbox || s.Detach) {
		return badField("--tty-titles needs --sandbox in the foreground (only that worker's terminal is relayed)")
	}
	return nil
}

// checkLifetime: the deadline and the grace before the whole-cgroup kill.
func (s *Spec) checkLifetime() error {
	if _, err := s.TimeoutDuration(); err != nil {
		return badField("--timeout %q: %v", s.Timeout, err)
	}
	if _, err := s.GraceDuration(); err != nil {
		return badField("--grace %q: %v", s.Grace, err)
	}
	return nil
}

// checkOutput: where a worker's output goes and what a detached one is recorded under (its log, its key).
func (s *Spec) checkOutput() error {
	if _, err := ParseStdio(string(s.Stdio)); err != nil {
		return err
	}
	if s.Stdio == StdioInherit && !s.Detach {
		return badField("--stdio inherit needs --detach (a foreground child always has hlaunch's stdio)")
	}
	if s.LogMax < 0 {
		return badField("--log-max: negative")
	}
	// A detached worker's log path and key travel to its shim, and into its record, as JSON strings,
	// which cannot hold other bytes (argv and the environ travel byte for byte).
	if s.Detach && !utf8.ValidString(s.Log) {
		return badField("--log %q: a detached worker's log path must be UTF-8", s.Log)
	}
	if len(s.Key) > MaxKeyBytes {
		// Not echoed: the value is what is too large.
		return badField("--key: %d bytes; at most %d (a key is kept in its worker's record, its ledger entry and every event of it)", len(s.Key), MaxKeyBytes)
	}
	if s.Key != "" && !s.Detach {
		return badField("--key needs --detach (a key is held by a recorded worker)")
	}
	if strings.ContainsAny(s.Key, "/\x00") || !utf8.ValidString(s.Key) {
		return badField("--key %q: must be UTF-8 without '/' or NUL", s.Key)
	}
	return nil
}

// CheckScope is the one check of a placement's name, for Validate and for a launcher's default placement
// (`hlaunch sidecar --scope`): "" (the default), auto, systemd, cgroup or none; any other is a FieldError
// naming --scope.
func CheckScope(scope string) error {
	_, err := ParseScope(scope)
	return err
}

// CheckCgroupParent is the one check of a raw-cgroup parent, for Validate and for a launcher's default
// (`hlaunch sidecar --cgroup-parent`): a path inside each hierarchy, not a systemd unit's cgroup; any other
// is a FieldError naming --cgroup-parent.
func CheckCgroupParent(p string) error {
	if p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return badField("--cgroup-parent %q: want a path inside each hierarchy, without \"..\" (e.g. hlaunch, the default)", p)
	}
	if name := lastComponent(p); isUnitName(name) {
		return badField("--cgroup-parent %q: %q is a systemd unit's name, whose cgroup systemd owns; use --scope systemd (with --slice) for systemd, or a parent of hlaunch's own (default hlaunch)", p, name)
	}
	return nil
}

// TimeoutDuration is the parsed Timeout, 0 for none.
func (s *Spec) TimeoutDuration() (time.Duration, error) { return ParseDurationOr(s.Timeout, 0) }

// GraceDuration is the parsed Grace, DefaultGrace when empty.
func (s *Spec) GraceDuration() (time.Duration, error) { return ParseDurationOr(s.Grace, DefaultGrace) }

// minCPUs is the smallest --cpus the kernel takes: 1 ms of CPU time per 100 ms bandwidth period.
const minCPUs = 0.01

// CheckLimits names the first limit out of range and what it takes, or "".
func CheckLimits(l cgroup.Limits) string {
	switch {
	case l.Memory < 0 && l.Memory != cgroup.Unlimited:
		return "--memory: must not be negative (max, or -1 in a spec, is no limit)"
	case l.MemoryHigh < 0:
		return "--memory-high: must not be negative"
	case l.Pids < 0 && l.Pids != cgroup.Unlimited:
		return fmt.Sprintf("--pids %d: must not be negative (max, or -1 in a spec, is no limit)", l.Pids)
	case l.CPUs < 0:
		return fmt.Sprintf("--cpus %g: must not be negative", l.CPUs)
	case l.CPUs > 0 && l.CPUs < minCPUs:
		return fmt.Sprintf("--cpus %g: below the minimum %g (1 ms of CPU time per 100 ms period)", l.CPUs, minCPUs)
	case l.CPUWeight > 10000, l.CPUWeight < 0 && l.CPUWeight != cgroup.Unlimited:
		return fmt.Sprintf("--cpu-weight %d: want 1..10000 (max, or -1 in a spec, is no weight of its own)", l.CPUWeight)
	}
	return ""
}

// lastComponent is the last element of a cgroup path ("a/b.slice" -> "b.slice").
func lastComponent(p string) string {
	p = strings.TrimRight(p, "/")
	return p[strings.LastIndex(p, "/")+1:]
}

// isUnitName reports whether a cgroup name is one systemd gives its units' cgroups.
func isUnitName(name string) bool {
	for _, suf := range []string{".slice", ".scope", ".service", ".socket", ".mount", ".swap"} {
		if strings.HasSuffix(name, suf) && len(name) > len(suf) {
			return true
		}
	}
	return false
}

// WithDefaults fills the placement fields s leaves empty from d, each only where it applies to s: the
// network only for a sandbox, the slice only for a placement that may be a scope, --require-scope only for a
// placement that is not "none" (resolve refuses that combination). A default never makes a spec invalid
// that the caller wrote validly.
func (s Spec) WithDefaults(d Spec) Spec {
	if s.Scope == "" {
		s.Scope = d.Scope
	}
	if s.Scope == "" {
		s.Scope = ScopeAuto
	}
	if s.CgroupParent == "" {
		s.CgroupParent = d.CgroupParent
	}
	if s.Slice == "" && (s.Scope == ScopeSystemd || s.Scope == ScopeAuto) {
		s.Slice = d.Slice
	}
	if s.Net == "" && s.Sandbox {
		s.Net = d.Net
	}
	if s.Scope != ScopeNone {
		s.RequireScope = s.RequireScope || d.RequireScope
	}
	s.UserManager = s.UserManager || d.UserManager
	return s
}
