package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/strictjson"
)

// Spec describes one launch. It is shared by `hlaunch exec` flags, `hlaunch exec --spec` and the sidecar's
// POST /v1/workers body; JSON names match the flags. Every zero value has the meaning given.
type Spec struct {
	// Profile is the hermes profile name ("default" means the root). Required.
	Profile string `json:"profile"`
	// Argv is the command and its arguments. Required; Argv[0] is looked up in the child's PATH.
	Argv []string `json:"argv"`
	// Cwd is the child's working directory; empty means the launcher's (for a sandboxed worker: the
	// launcher's when it is inside the home or an RW path, else the home). A sandboxed worker's Cwd is
	// writable, so it obeys RW's rules.
	Cwd string `json:"cwd,omitempty"`
	// Env holds literal values from the caller (--env K=V); they override the profile's.
	Env map[string]string `json:"env,omitempty"`
	// Inherit names variables copied from the launcher's environment (--inherit); credentials and
	// launch-profile settings are refused.
	Inherit []string `json:"inherit,omitempty"`
	// Secrets is SecretsProfile (the zero value) or SecretsNone.
	Secrets Secrets `json:"secrets,omitempty"`
	// Pass names credentials added back from the target's .env when Secrets is SecretsNone.
	Pass []string `json:"pass,omitempty"`
	// Scope is the placement mode; empty means ScopeAuto.
	Scope Scope `json:"scope,omitempty"`
	// RequireScope turns a degraded placement into an error (exit 75) instead of a warning.
	RequireScope bool `json:"require_scope,omitempty"`
	// Unit is the systemd unit name without ".scope"; empty means "hlaunch-<profile>-<id>".
	Unit string `json:"unit,omitempty"`
	// UserManager selects the caller's user manager (--user) even as root; the default for root is the
	// system manager, for everyone else the user manager.
	UserManager bool `json:"user_manager,omitempty"`
	// Slice is the systemd slice for the scope; empty means the manager's default.
	Slice string `json:"slice,omitempty"`
	// CgroupParent is the raw-cgroup parent relative to each hierarchy's root; empty means "hlaunch".
	CgroupParent string `json:"cgroup_parent,omitempty"`
	// Limits are the worker's resource limits. A zero field takes the launcher's default (Config.Defaults;
	// built in: tasks, memory and CPU weight, BuiltinLimits), cgroup.Unlimited (-1) is no limit; the
	// receipt shows the limits applied. A worker without a cgroup (--scope none, degraded) has none.
	Limits cgroup.Limits `json:"limits,omitempty"`
	// Sandbox runs the child in new mount, pid, ipc, uts and cgroup namespaces with the profile view.
	Sandbox bool `json:"sandbox,omitempty"`
	// Net is NetHost (the zero value means the same) or NetNone (a new, empty network namespace); sandbox only.
	Net Net `json:"net,omitempty"`
	// Seccomp is SeccompDefault (the zero value means the same: every sandboxed worker runs under the
	// system-call filter) or SeccompOff; sandbox only. A sidecar refuses SeccompOff unless it was started
	// with --allow-seccomp-off.
	Seccomp Seccomp `json:"seccomp,omitempty"`
	// RW lists extra host paths that stay writable inside the sandbox.
	RW []string `json:"rw,omitempty"`
	// User is "UID:GID" to drop to before exec (sandboxed workers only); empty means, for a root
	// launcher, the owner of the profile home (refused when that is root), else the launcher's own uid.
	User string `json:"user,omitempty"`
	// TTYTitles lets a sandboxed foreground worker on a terminal set the caller's window and icon titles
	// (OSC 0, 1, 2) through its pty's relay; false (the zero value) drops them with every other sequence
	// that acts outside the screen (docs/security.md, "The terminal and the session").
	TTYTitles bool `json:"tty_titles,omitempty"`
	// Key makes the launch exclusive: refused while another worker holding Key verifies as running.
	Key string `json:"key,omitempty"`
	// Timeout is the wall-clock limit (Go duration, e.g. "30s"); empty means none.
	Timeout string `json:"timeout,omitempty"`
	// Grace is the time between SIGTERM and the whole-cgroup kill; empty means 5s.
	Grace string `json:"grace,omitempty"`
	// Log is a file that receives stdout and stderr (appended, rotated by size); empty means the caller's
	// stdio in the foreground, and for a detached worker the launcher's per-worker log (Config.LogDir) or
	// /dev/null.
	Log string `json:"log,omitempty"`
	// LogMax is the size in bytes at which Log is rotated when a launch opens it, and by a detached
	// worker's shim while the worker runs (one old file kept as <log>.1); zero means workerlog.RotateSize (2 MiB).
	LogMax int64 `json:"log_max,omitempty"`
	// Stdio is "" (the zero value: stdin /dev/null, stdout and stderr to Log or /dev/null when detached) or
	// "inherit": a detached worker gets the caller's own descriptors - the CLI's stdin, stdout and stderr, or
	// the three a sidecar client passed with its request (SCM_RIGHTS). Log, when set, still takes stdout
	// and stderr.
	Stdio StdioMode `json:"stdio,omitempty"`
	// Detach starts the worker under a shim and returns at once with its receipt.
	Detach bool `json:"detach,omitempty"`
}

// DecodeSpec decodes one JSON launch spec, the only decoder of a Spec (`hlaunch exec --spec` and the
// sidecar's POST /v1/workers both use it). It is strict (internal/strictjson): keys are matched exactly,
// a repeated key, an unknown key, trailing data, invalid UTF-8 and an unpaired surrogate escape are
// refused. A lenient decoder would let a body that a proxy or the JSON Schema reads as
// {"profile":"b","sandbox":true} run as another profile, unsandboxed ({"Profile":"c"} or a second
// "sandbox":false). The error wraps ErrInvalid and names the key or byte offset.
//
// The sizes in "limits" (memory, memory_high) are a number of bytes or a string the flags take ("512M",
// "max"), parsed by the flags' own parser (specLimits).
func DecodeSpec(data []byte) (Spec, error) {
	var w struct {
		Spec
		Limits specLimits `json:"limits,omitempty"` // shadows Spec.Limits, as encoding/json's rules say
	}
	w.Limits.Memory.flag, w.Limits.MemoryHigh.flag = "--memory", "--memory-high"
	if err := strictjson.Decode(data, &w); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return Spec{}, fe
		}
		if fe := typeError(err); fe != nil {
			return Spec{}, fe
		}
		return Spec{}, fmt.Errorf("%w: spec: %w", ErrInvalid, err)
	}
	s := w.Spec
	s.Limits = w.Limits.limits()
	return s, nil
}

// typeError words a JSON value of the wrong type as a FieldError naming its setting ("--sandbox: want a
// JSON bool, got string"), or is nil for any other error or a field no setting names.
func typeError(err error) *FieldError {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return nil
	}
	field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "."), "Spec.")
	for _, st := range Settings() {
		if st.Field == field && st.Flag != "" {
			return &FieldError{Msg: fmt.Sprintf("%s: want a JSON %s, got %s", st.Flag, te.Type, te.Value)}
		}
	}
	return nil
}

// EnvLookup reads a name from an environ slice (the last assignment wins, as getenv does).
func EnvLookup(env []string) func(string) string {
	return func(name string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v
			}
		}
		return ""
	}
}

// Stdio are the foreground child's standard streams; nil fields mean /dev/null.
type Stdio struct {
	Stdin          *os.File
	Stdout, Stderr *os.File
	// OnReceipt, when not nil, is called by a detached start with the worker's receipt before the worker
	// may run: a worker with inherited stdio is held until it returns, so the receipt the CLI prints there
	// comes before any output of the worker.
	OnReceipt func(*Receipt)
}
