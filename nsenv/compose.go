package nsenv

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Secrets modes of a Request.
const (
	// SecretsProfile passes every entry of the target's .env except Tier-1 names (the default).
	SecretsProfile = "profile"
	// SecretsNone passes the target's .env minus every credential; Request.Pass adds names back.
	SecretsNone = "none"
)

// Request describes the environ one child gets. The zero value of each field means what its comment says.
type Request struct {
	// Profile is the target profile (required), from OpenProfile.
	Profile *Profile
	// Secrets is SecretsProfile (also the zero value "") or SecretsNone.
	Secrets string
	// Pass names entries of the target's .env to add back under SecretsNone (--pass). A name must be in
	// the .env and must not be Tier-1. Under SecretsProfile the same checks apply, and they add nothing.
	Pass []string
	// Env holds literal values from the caller (--env). Tier-1 names and the names that fix the child's
	// identity (HERMES_HOME, HERMES_PROFILE, HERMES_REAL_HOME) are refused.
	Env map[string]string
	// Inherit names variables to copy from Launcher (--inherit). Refused for credentials, launch-profile
	// settings, profile gates and Tier-1 names. A name the launcher does not hold is simply not set.
	Inherit []string
	// Launcher is the launcher's own environment as os.Environ() returns it. Only base names and Inherit
	// names are ever read from it; when a name repeats, the first occurrence counts (as os.Getenv).
	Launcher []string
	// OSHome is the OS home directory, passed on as HERMES_REAL_HOME; empty leaves HERMES_REAL_HOME unset.
	OSHome string
	// Policy decides the name classes; nil means DefaultPolicy().
	Policy *Policy
}

// isPinned reports whether up (upper-cased) names which profile a child belongs to. Such names always
// hold the derived values: a target's .env entry for one is skipped (hermes reads these from the process,
// never from a profile's secrets) and --env refuses them.
func isPinned(up string) bool {
	switch up {
	case "HERMES_HOME", "HERMES_PROFILE", "HERMES_REAL_HOME":
		return true
	}
	return false
}

// Compose builds the child's environ from, in order (a later layer overrides an earlier one by exact
// name, and each entry keeps its provenance):
//
//  1. base: the Policy's base names (PATH LANG LC_* TZ TERM USER LOGNAME SHELL HOME) copied from the
//     launcher, matched exactly. Nothing else of the launcher's environment is read;
//  2. derived: HERMES_HOME=<home>, HERMES_PROFILE=<name>, TMPDIR=TMP=TEMP=<home>/cache/scratch,
//     HERMES_REAL_HOME=<OSHome>;
//  3. the target's .env (SecretsProfile: every entry but Tier-1 names, which never reach a child;
//     SecretsNone: minus every credential, then the Pass names from the .env, never Tier-1). A profile's
//     own gate names are its own and pass. Duplicates: the later line wins, as in hermes;
//  4. Env: literal values from the caller; a Tier-1 name is refused (ErrRefusedName) rather than silently
//     dropped, because a caller asking for it has a bug the caller should see;
//  5. Inherit: names copied from the launcher, refused with ErrRefusedInherit for a credential, a
//     launch-profile setting, a profile gate or a Tier-1 name.
//
// Entries that are credentials are marked Secret. The result is sorted by name, one entry per name.
func Compose(req Request) (Environ, error) {
	if req.Profile == nil {
		return nil, fmt.Errorf("%w: no profile", ErrInvalidRequest)
	}
	switch req.Secrets {
	case "", SecretsProfile, SecretsNone:
	default:
		return nil, fmt.Errorf("--secrets %q: %w: want %q or %q", req.Secrets, ErrInvalidRequest, SecretsProfile, SecretsNone)
	}
	m := req.Policy.compile()
	p := req.Profile

	// Check every flag before reading any file, so bad input fails the same way whatever is on disk.
	envKeys := slices.Sorted(maps.Keys(req.Env))
	for _, k := range envKeys {
		if err := checkFlagName(k); err != nil {
			return nil, fmt.Errorf("--env %q: %w", k, err)
		}
		if strings.IndexByte(req.Env[k], 0) >= 0 {
			return nil, fmt.Errorf("--env %q: %w: NUL byte in the value", k, ErrBadAssignment)
		}
		up := upperASCII(k)
		if m.isTier1(up) {
			return nil, fmt.Errorf("--env %s: %w: a Tier-1 name never reaches a child", k, ErrRefusedName)
		}
		if isPinned(up) {
			return nil, fmt.Errorf("--env %s: %w: it names the child's profile and is always derived from -p", k, ErrRefusedName)
		}
	}
	for _, k := range req.Inherit {
		if err := checkFlagName(k); err != nil {
			return nil, fmt.Errorf("--inherit %q: %w", k, err)
		}
		if why := m.refuseInherit(upperASCII(k)); why != "" {
			return nil, fmt.Errorf("--inherit %s: %w: %s", k, ErrRefusedInherit, why)
		}
	}
	for _, k := range req.Pass {
		if err := checkFlagName(k); err != nil {
			return nil, fmt.Errorf("--pass %q: %w", k, err)
		}
		if m.isTier1(upperASCII(k)) {
			return nil, fmt.Errorf("--pass %s: %w: a Tier-1 name never reaches a child", k, ErrRefusedName)
		}
	}

	dotenv, err := ReadDotenv(p)
	if err != nil {
		return nil, err
	}

	env := make(map[string]Entry, len(dotenv)+16)
	set := func(name, value, source string) {
		env[name] = Entry{Name: name, Value: value, Source: source, Secret: m.isCredential(upperASCII(name))}
	}

	// 1. base
	for _, kv := range req.Launcher {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !m.baseExact.match(name) {
			continue
		}
		if _, seen := env[name]; !seen {
			set(name, value, SourceLauncher)
		}
	}

	// 2. derived
	scratch := p.Scratch()
	set("HERMES_HOME", p.Home, SourceDerived)
	set("HERMES_PROFILE", p.Name, SourceDerived)
	set("TMPDIR", scratch, SourceDerived)
	set("TMP", scratch, SourceDerived)
	set("TEMP", scratch, SourceDerived)
	if req.OSHome != "" {
		set("HERMES_REAL_HOME", req.OSHome, SourceDerived)
	}

	// 3. the target's .env
	file := p.EnvFile()
	prefix := sourceProfilePrefix + file + ":"
	last := make(map[string]int, len(dotenv)) // name -> index of its last line, for --pass
	for i, d := range dotenv {
		if strings.IndexByte(d.Key, 0) >= 0 || strings.IndexByte(d.Value, 0) >= 0 {
			return nil, fmt.Errorf("%s:%d: %w: NUL byte in %q", file, d.Line, ErrInvalidEntry, d.Key)
		}
		last[d.Key] = i
	}
	for _, d := range dotenv {
		up := upperASCII(d.Key)
		if m.isTier1(up) || isPinned(up) {
			continue
		}
		if req.Secrets == SecretsNone && m.isCredential(up) {
			continue
		}
		set(d.Key, d.Value, prefix+strconv.Itoa(d.Line))
	}
	for _, k := range req.Pass {
		i, ok := last[k]
		if !ok {
			return nil, fmt.Errorf("--pass %s: %w %s", k, ErrPassNotFound, file)
		}
		if d := dotenv[i]; !isPinned(upperASCII(k)) {
			set(d.Key, d.Value, prefix+strconv.Itoa(d.Line))
		}
	}

	// 4. --env
	for _, k := range envKeys {
		set(k, req.Env[k], SourceFlag)
	}

	// 5. --inherit
	for _, k := range req.Inherit {
		if v, ok := lookupFirst(req.Launcher, k); ok {
			set(k, v, SourceLauncher)
		}
	}

	out := make(Environ, 0, len(env))
	for _, e := range env {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// refuseInherit says why name (upper-cased) may not be copied from the launcher, or "" when it may.
func (m *matcher) refuseInherit(up string) string {
	switch {
	case m.isTier1(up):
		return "a Tier-1 name never reaches a child"
	case m.isCredential(up):
		return "a credential comes only from the target profile's .env (--secrets, --pass), never from the launcher"
	case m.isLaunchSetting(up):
		return "a launch-profile setting (TERMINAL_*, HERMES_*) belongs to the launcher's profile, not the target's"
	case m.isProfileGate(up):
		return "a profile gate belongs to one profile and never reaches another profile's child"
	}
	return ""
}

// lookupFirst finds name in an os.Environ()-style list; the first occurrence wins, as with os.Getenv.
func lookupFirst(environ []string, name string) (string, bool) {
	for _, kv := range environ {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return kv[len(name)+1:], true
		}
	}
	return "", false
}
