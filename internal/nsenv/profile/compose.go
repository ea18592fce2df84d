package profile

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
	// Profile is the target profile (required), from Open.
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
	// WorkerUID is the host uid the child runs as (the zero value is root). A .env owned by neither this
	// uid nor root is foreign: it may set only the names ForeignAllowed allows (docs/security.md,
	// "Privilege follows the profile").
	WorkerUID uint32
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
//     launcher, matched exactly. Nothing else of the launcher's environment is read, and a base entry
//     (from a policy file) never copies a credential, a Tier-1 name or a profile gate: those come only
//     from the target's .env;
//  2. derived: HERMES_HOME=<home>, HERMES_PROFILE=<name>, TMPDIR=TMP=TEMP=<home>/cache/scratch,
//     HERMES_REAL_HOME=<OSHome>;
//  3. the target's .env (SecretsProfile: every entry but Tier-1 names, which never reach a child;
//     SecretsNone: minus every credential, then the Pass names from the .env, never Tier-1). A profile's
//     own gate names are its own and pass. Duplicates: the later line wins, as in hermes. Entries for
//     HERMES_HOME, HERMES_PROFILE and HERMES_REAL_HOME (any case) are skipped: the derived values name
//     the child's profile and nothing in a .env may point it at another home;
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
			return nil, fmt.Errorf("--env %q: %w: %s", k, ErrRefusedName, tier1Why(up))
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
			return nil, fmt.Errorf("--pass %q: %w: %s", k, ErrRefusedName, tier1Why(upperASCII(k)))
		}
	}

	dotenv, owner, err := readDotenv(p)
	if err != nil {
		return nil, err
	}
	// A .env that anyone but the worker's uid or root can choose may not choose what code the worker runs:
	// a worker of a root launcher run as root (--as 0:0) would otherwise run what a user's .env names (HOME,
	// a GIT_CONFIG_* pager, PYTHONPATH ...), and that user's workers, sandboxed ones too, can rewrite it or
	// rename another file over it in a home they can write. A deny list of such names is never complete, so
	// such a .env may set only the credentials, the profile's gates and the policy's foreign_allow names;
	// the caller can still pass any other name with --pass (from the .env) or --env. foreign says why, ""
	// when nobody else can choose the file.
	foreign := ""
	if owner != noOwner && owner != 0 && owner != req.WorkerUID {
		foreign = fmt.Sprintf("the file is owned by uid %d", owner)
	} else if owner != noOwner {
		if foreign, err = homeWriter(p, req.WorkerUID); err != nil {
			return nil, err
		}
	}

	// Layers append in order; the final sort keeps the last entry of each name. One slice and one index
	// sort instead of a map of entries: this runs on every launch.
	out := make(Environ, 0, len(dotenv)+len(req.Env)+len(req.Inherit)+16)
	add := func(name, value, source string, secret bool) {
		out = append(out, Entry{Name: name, Value: value, Source: source, Secret: secret})
	}
	addClassified := func(name, value, source string) {
		add(name, value, source, m.isCredential(upperASCII(name)))
	}

	// 1. base (the first occurrence of a name in the launcher counts, as with os.Getenv)
	for _, kv := range req.Launcher {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !m.baseExact.match(name) {
			continue
		}
		if up := upperASCII(name); m.isCredential(up) || m.isProfileGate(up) || m.isLaunchSetting(up) {
			continue // a policy's "base": ["*_TOKEN"] or ["TERM*"] must not copy the launcher's secrets or its profile's settings
		}
		if _, seen := out.Lookup(name); !seen {
			addClassified(name, value, SourceLauncher)
		}
	}

	// 2. derived
	scratch := p.Scratch()
	add("HERMES_HOME", p.Home, SourceDerived, false)
	add("HERMES_PROFILE", p.Name, SourceDerived, false)
	add("TMPDIR", scratch, SourceDerived, false)
	add("TMP", scratch, SourceDerived, false)
	add("TEMP", scratch, SourceDerived, false)
	if req.OSHome != "" {
		add("HERMES_REAL_HOME", req.OSHome, SourceDerived, false)
	}

	// 3. the target's .env
	file := p.EnvFile()
	sources := profileSources(file, dotenv)
	last := make(map[string]int, len(req.Pass)) // --pass name -> index of its last line
	for _, k := range req.Pass {
		last[k] = -1
	}
	for i, d := range dotenv {
		if strings.IndexByte(d.Key, 0) >= 0 || strings.IndexByte(d.Value, 0) >= 0 {
			return nil, fmt.Errorf("%s:%d: %w: NUL byte in %q", file, d.Line, ErrInvalidEntry, d.Key)
		}
		if _, ok := last[d.Key]; ok {
			last[d.Key] = i
		}
		up := upperASCII(d.Key)
		if isPinned(up) || m.isTier1(up) {
			continue
		}
		if _, passed := last[d.Key]; foreign != "" && !passed && !m.foreignAllowed(up) {
			if _, given := req.Env[d.Key]; !given {
				return nil, fmt.Errorf("%s:%d: %w: %s: %s and the worker runs as uid %d, and such a .env sets only credentials, profile gates and the policy's foreign_allow names (pass it with --pass %s or --env, or run the worker as the home's owner by dropping --as)",
					file, d.Line, ErrRefusedName, d.Key, foreign, req.WorkerUID, d.Key)
			}
		}
		cred := m.isCredential(up)
		if req.Secrets == SecretsNone && cred {
			continue
		}
		add(d.Key, d.Value, sources[i], cred)
	}
	for _, k := range req.Pass {
		i := last[k]
		if i < 0 {
			return nil, fmt.Errorf("--pass %s: %w %s", k, ErrPassNotFound, file)
		}
		if !isPinned(upperASCII(k)) {
			addClassified(k, dotenv[i].Value, sources[i])
		}
	}

	// 4. --env
	for _, k := range envKeys {
		addClassified(k, req.Env[k], SourceFlag)
	}

	// 5. --inherit
	for _, k := range req.Inherit {
		if v, ok := lookupFirst(req.Launcher, k); ok {
			addClassified(k, v, SourceLauncher)
		}
	}
	return lastByName(out), nil
}

// profileSources builds "profile:<file>:<line>" for every entry in one allocation.
func profileSources(file string, dotenv []DotenvEntry) []string {
	prefix := sourceProfilePrefix + file + ":"
	var sb strings.Builder
	sb.Grow(len(dotenv) * (len(prefix) + 6))
	ends := make([]int, len(dotenv))
	var num [20]byte
	for i, d := range dotenv {
		sb.WriteString(prefix)
		sb.Write(strconv.AppendInt(num[:0], int64(d.Line), 10))
		ends[i] = sb.Len()
	}
	all := sb.String()
	out := make([]string, len(dotenv))
	start := 0
	for i, end := range ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}

// lastByName sorts e by name and keeps, for each name, the entry added last.
func lastByName(e Environ) Environ {
	idx := make([]int32, len(e))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := strings.Compare(e[a].Name, e[b].Name); c != 0 {
			return c
		}
		return int(a - b)
	})
	out := make(Environ, 0, len(e))
	for j, i := range idx {
		if j+1 < len(idx) && e[idx[j+1]].Name == e[i].Name {
			continue
		}
		out = append(out, e[i])
	}
	return out
}

// refuseInherit says why name (upper-cased) may not be copied from the launcher, or "" when it may.
func (m *matcher) refuseInherit(up string) string {
	switch {
	case m.isTier1(up):
		return tier1Why(up)
	case m.isCredential(up):
		return "a credential comes only from the target profile's .env (--secrets, --pass), never from the launcher"
	case m.isLaunchSetting(up):
		return "a launch-profile setting (TERMINAL_*, HERMES_*) belongs to the launcher's profile, not the target's"
	case m.isProfileGate(up):
		return "a profile gate belongs to one profile and never reaches another profile's child"
	}
	return ""
}

// tier1Why says why a Tier-1 name (upper-cased) is refused.
func tier1Why(up string) string {
	if !isASCII(up) {
		return "a name outside ASCII never reaches a child (hermes upper-cases names with Unicode rules, so it may be a Tier-1 name in disguise)"
	}
	return "a Tier-1 name never reaches a child"
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
