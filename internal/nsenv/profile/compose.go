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
	if err := checkFlags(&req, m, envKeys); err != nil {
		return nil, err
	}
	dotenv, owner, err := readDotenv(p)
	if err != nil {
		return nil, err
	}
	foreign, err := foreignWriter(p, owner, req.WorkerUID)
	if err != nil {
		return nil, err
	}

	// Layers append in order; the final sort keeps the last entry of each name. One slice and one index
	// sort instead of a map of entries: this runs on every launch.
	c := composer{req: req, m: m, out: make(Environ, 0, len(dotenv)+len(req.Env)+len(req.Inherit)+16)}
	c.base()
	c.derived()
	if err := c.dotenv(dotenv, foreign); err != nil {
		return nil, err
	}
	c.env(envKeys)
	c.inherit()
	return lastByName(c.out), nil
}

// checkFlags refuses a bad --env, --inherit or --pass name before anything is read: each must be a
// valid name, and none may ask for a name its layer never passes (see Compose). envKeys are req.Env's
// names, sorted, so that the first refusal is the same on every run.
func checkFlags(req *Request, m *matcher, envKeys []string) error {
	for _, k := range envKeys {
		if err := checkEnvFlag(m, k, req.Env[k]); err != nil {
			return err
		}
	}
	for _, k := range req.Inherit {
		if err := checkFlagName(k); err != nil {
			return fmt.Errorf("--inherit %q: %w", k, err)
		}
		if why := m.refuseInherit(upperASCII(k)); why != "" {
			return fmt.Errorf("--inherit %s: %w: %s", k, ErrRefusedInherit, why)
		}
	}
	for _, k := range req.Pass {
		if err := checkFlagName(k); err != nil {
			return fmt.Errorf("--pass %q: %w", k, err)
		}
		if m.isTier1(upperASCII(k)) {
			return fmt.Errorf("--pass %q: %w: %s", k, ErrRefusedName, tier1Why(upperASCII(k)))
		}
	}
	return nil
}

// checkEnvFlag refuses an --env k=v that could not be an environ entry (a bad name, a NUL in the value),
// a Tier-1 name (refused rather than dropped: a caller asking for one has a bug it should see) and a
// pinned name (it would point the child at another profile).
func checkEnvFlag(m *matcher, k, v string) error {
	if err := checkFlagName(k); err != nil {
		return fmt.Errorf("--env %q: %w", k, err)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("--env %q: %w: NUL byte in the value", k, ErrBadAssignment)
	}
	up := upperASCII(k)
	if m.isTier1(up) {
		return fmt.Errorf("--env %q: %w: %s", k, ErrRefusedName, tier1Why(up))
	}
	if isPinned(up) {
		return fmt.Errorf("--env %s: %w: it names the child's profile and is always derived from -p", k, ErrRefusedName)
	}
	return nil
}

// foreignWriter says why someone other than uid or root can choose the profile's .env (owner is its
// owner, noOwner when there is none), or "" when nobody else can.
//
// Such a .env may not choose what code the worker runs: a worker of a root launcher run as root (--as
// 0:0) would otherwise run what a user's .env names (HOME, a GIT_CONFIG_* pager, PYTHONPATH ...), and that
// user's workers, sandboxed ones too, can rewrite it or rename another file over it in a home they can
// write. A deny list of such names is never complete, so such a .env may set only the credentials, the
// profile's gates and the policy's foreign_allow names; the caller can still pass any other name with
// --pass (from the .env) or --env.
func foreignWriter(p *Profile, owner, uid uint32) (string, error) {
	switch {
	case owner == noOwner:
		return "", nil
	case owner != 0 && owner != uid:
		return fmt.Sprintf("the file is owned by uid %d", owner), nil
	}
	return homeWriter(p, uid)
}

// composer collects the entries of Compose's layers in order, each with its provenance.
type composer struct {
	req Request
	m   *matcher
	out Environ
}

// add appends one entry.
func (c *composer) add(name, value, source string, secret bool) {
	c.out = append(c.out, Entry{Name: name, Value: value, Source: source, Secret: secret})
}

// addClassified appends one entry, marked Secret when its name is a credential.
func (c *composer) addClassified(name, value, source string) {
	c.add(name, value, source, c.m.isCredential(upperASCII(name)))
}

// base is layer 1: the policy's base names from the launcher, the first occurrence of a name counting
// (as with os.Getenv). A credential, profile gate or launch-profile setting is skipped even when a base
// pattern matches it: a policy's "base": ["*_TOKEN"] or ["TERM*"] must not copy the launcher's secrets
// or its own profile's settings into another profile's child.
func (c *composer) base() {
	for _, kv := range c.req.Launcher {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !c.m.baseExact.match(name) {
			continue
		}
		if up := upperASCII(name); c.m.isCredential(up) || c.m.isProfileGate(up) || c.m.isLaunchSetting(up) {
			continue
		}
		if _, seen := c.out.Lookup(name); !seen {
			c.addClassified(name, value, SourceLauncher)
		}
	}
}

// derived is layer 2: the names that say which profile the child belongs to and where its scratch
// space is; none of them is ever a secret.
func (c *composer) derived() {
	p := c.req.Profile
	scratch := p.Scratch()
	c.add("HERMES_HOME", p.Home, SourceDerived, false)
	c.add("HERMES_PROFILE", p.Name, SourceDerived, false)
	c.add("TMPDIR", scratch, SourceDerived, false)
	c.add("TMP", scratch, SourceDerived, false)
	c.add("TEMP", scratch, SourceDerived, false)
	if c.req.OSHome != "" {
		c.add("HERMES_REAL_HOME", c.req.OSHome, SourceDerived, false)
	}
}

// dotenv is layer 3: the target's .env entries in file order, without pinned and Tier-1 names and,
// under SecretsNone, without credentials; then the --pass names added back from their last line.
// foreign (see foreignWriter) refuses every other name the caller did not pass itself. A NUL byte in a
// key or value is refused, naming the line, as the child could not be given it.
func (c *composer) dotenv(dotenv []DotenvEntry, foreign string) error {
	file := c.req.Profile.EnvFile()
	sources := profileSources(file, dotenv)
	last := passLines(c.req.Pass, dotenv)
	for i, d := range dotenv {
		if strings.IndexByte(d.Key, 0) >= 0 || strings.IndexByte(d.Value, 0) >= 0 {
			return fmt.Errorf("%s:%d: %w: NUL byte in %q", file, d.Line, ErrInvalidEntry, d.Key)
		}
		up := upperASCII(d.Key)
		if isPinned(up) || c.m.isTier1(up) {
			continue
		}
		if err := c.refuseForeign(file, d, up, foreign, last); err != nil {
			return err
		}
		cred := c.m.isCredential(up)
		if c.req.Secrets == SecretsNone && cred {
			continue
		}
		c.add(d.Key, d.Value, sources[i], cred)
	}
	for _, k := range c.req.Pass {
		i := last[k]
		if i < 0 {
			return fmt.Errorf("--pass %s: %w %s", k, ErrPassNotFound, file)
		}
		if !isPinned(upperASCII(k)) {
			c.addClassified(k, dotenv[i].Value, sources[i])
		}
	}
	return nil
}

// passLines maps each --pass name to the index of its last entry in dotenv (the one hermes keeps), -1
// when the .env does not have it.
func passLines(pass []string, dotenv []DotenvEntry) map[string]int {
	last := make(map[string]int, len(pass))
	for _, k := range pass {
		last[k] = -1
	}
	for i, d := range dotenv {
		if _, ok := last[d.Key]; ok {
			last[d.Key] = i
		}
	}
	return last
}

// refuseForeign refuses entry d (up: its name upper-cased) of a foreign .env (foreign != "") unless the
// policy lets such a file set it or the caller names it itself (--pass, a key of passed; or --env).
func (c *composer) refuseForeign(file string, d DotenvEntry, up, foreign string, passed map[string]int) error {
	if foreign == "" || c.m.foreignAllowed(up) {
		return nil
	}
	if _, ok := passed[d.Key]; ok {
		return nil
	}
	if _, given := c.req.Env[d.Key]; given {
		return nil
	}
	return fmt.Errorf("%s:%d: %w: %s: %s and the worker runs as uid %d, and such a .env sets only credentials, profile gates and the policy's foreign_allow names (pass it with --pass %s or --env, or run the worker as the home's owner by dropping --as)",
		file, d.Line, ErrRefusedName, d.Key, foreign, c.req.WorkerUID, d.Key)
}

// env is layer 4: the caller's literal --env values, in name order (checkFlags has refused the names
// no child may get).
func (c *composer) env(envKeys []string) {
	for _, k := range envKeys {
		c.addClassified(k, c.req.Env[k], SourceFlag)
	}
}

// inherit is layer 5: the --inherit names the launcher holds (checkFlags has refused the names that
// never come from the launcher); a name it does not hold is not set.
func (c *composer) inherit() {
	for _, k := range c.req.Inherit {
		if v, ok := lookupFirst(c.req.Launcher, k); ok {
			c.addClassified(k, v, SourceLauncher)
		}
	}
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
