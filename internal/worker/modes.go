package worker

import (
	"fmt"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
)

// The enumerated values of a Spec and a Receipt: each a named string type with its constants and one
// Parse function (the one check Spec.Validate makes; a caller holding a flag's string uses it too). The
// JSON form is the plain string.

// Scope is Spec.Scope, the placement asked for; "" means ScopeAuto.
type Scope string

// Placement modes for Spec.Scope.
const (
	ScopeAuto    Scope = "auto"    // a systemd scope when a manager answers, else a raw cgroup, else degraded
	ScopeSystemd Scope = "systemd" // a transient systemd scope; an error when none can be made
	ScopeCgroup  Scope = "cgroup"  // a raw cgroup under CgroupParent
	ScopeNone    Scope = "none"    // no placement: a plain child
)

// ParseScope checks --scope's value ("" is accepted: the launcher's default, else auto).
func ParseScope(s string) (Scope, error) {
	switch v := Scope(s); v {
	case "", ScopeAuto, ScopeSystemd, ScopeCgroup, ScopeNone:
		return v, nil
	}
	return "", badField("--scope %q: want auto, systemd, cgroup or none", s)
}

// Secrets is Spec.Secrets, which credentials of the target's .env a worker gets; "" means SecretsProfile.
type Secrets string

// Secrets modes for Spec.Secrets.
const (
	SecretsProfile Secrets = profile.SecretsProfile // every .env entry of the target except Tier-1 names
	SecretsNone    Secrets = profile.SecretsNone    // the target's .env minus every credential; Pass adds named ones back
)

// ParseSecrets checks --secrets' value ("" is SecretsProfile).
func ParseSecrets(s string) (Secrets, error) {
	switch v := Secrets(s); v {
	case "", SecretsProfile, SecretsNone:
		return v, nil
	}
	return "", badField("--secrets %q: want profile or none", s)
}

// Net is Spec.Net, a sandboxed worker's network; "" means NetHost.
type Net string

// Network modes for Spec.Net.
const (
	NetHost Net = sandbox.NetHost // the launcher's network namespace
	NetNone Net = sandbox.NetNone // a new, empty network namespace (loopback only)
)

// ParseNet checks --net's value ("" is NetHost).
func ParseNet(s string) (Net, error) {
	switch v := Net(s); v {
	case "", NetHost, NetNone:
		return v, nil
	}
	return "", badField("--net %q: want host or none", s)
}

// Seccomp is Spec.Seccomp and Receipt.Seccomp: whether a sandboxed worker runs under the system-call
// filter; "" in a Spec means SeccompDefault.
type Seccomp string

// Seccomp modes for Spec.Seccomp.
const (
	SeccompDefault Seccomp = "default" // the system-call filter of internal/seccomp (docs/security.md)
	SeccompOff     Seccomp = "off"     // no filter: the sandbox's namespaces, view and dropped capabilities only
)

// ParseSeccomp checks --seccomp's value ("" is SeccompDefault).
func ParseSeccomp(s string) (Seccomp, error) {
	switch v := Seccomp(s); v {
	case "", SeccompDefault, SeccompOff:
		return v, nil
	}
	return "", badField("--seccomp %q: want default or off", s)
}

// StdioMode is Spec.Stdio: "" (stdin /dev/null, stdout and stderr to the log) or StdioInherit.
type StdioMode string

// StdioInherit is Spec.Stdio's one value: the worker gets the caller's descriptors.
const StdioInherit StdioMode = "inherit"

// ParseStdio checks --stdio's value.
func ParseStdio(s string) (StdioMode, error) {
	switch v := StdioMode(s); v {
	case "", StdioInherit:
		return v, nil
	}
	return "", badField("--stdio %q: want inherit, or nothing", s)
}

// Mode is Receipt.Mode: where the worker was placed.
type Mode string

// Receipt modes.
const (
	ModeScoped   Mode = "scoped"   // a transient systemd scope
	ModeCgroup   Mode = "cgroup"   // a raw cgroup hlaunch made
	ModeDegraded Mode = "degraded" // a plain process in its own session: --scope auto found no placement
	ModeNone     Mode = "none"     // --scope none
)

// Landlock is Receipt.Landlock: whether the kernel set a sandboxed worker's Landlock scopes.
type Landlock string

// Landlock values of Receipt.Landlock.
const (
	LandlockScoped      Landlock = "scoped"      // no abstract Unix socket, no signal outside the sandbox
	LandlockUnavailable Landlock = "unavailable" // the kernel has no Landlock scopes (before Linux 6.12)
)

// badField is a refusal of one field's value, in Spec.Validate's words (a FieldError).
func badField(format string, args ...any) error {
	return &FieldError{Msg: fmt.Sprintf(format, args...)}
}
