package launcher

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/placement"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// New checks cfg and returns a Launcher. It resolves the hermes root, loads the policy and detects the
// host's cgroup layout once; nothing is created.
func New(cfg Config) (*Launcher, error) {
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Self == "" {
		cfg.Self = "/proc/self/exe"
	}
	l := &Launcher{cfg: cfg}
	l.Getenv = worker.EnvLookup(cfg.Environ)
	getenv := worker.EnvLookup(cfg.Environ)
	root, err := profile.ResolveRoot(cfg.Root, getenv, osHome(getenv))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", worker.ErrInvalid, err)
	}
	l.root = root
	l.policy = profile.DefaultPolicy()
	if cfg.PolicyFile != "" {
		if l.policy, err = profile.LoadPolicyFile(cfg.PolicyFile); err != nil {
			return nil, fmt.Errorf("%w: %w", worker.ErrInvalid, err)
		}
	}
	l.StatePath = cfg.StateDir
	if l.StatePath == "" {
		l.StatePath = defaultStateDir(getenv)
	}
	if !filepath.IsAbs(l.StatePath) {
		return nil, fmt.Errorf("%w: --state-dir %q must be absolute", worker.ErrInvalid, l.StatePath)
	}
	l.LedgerPath = cfg.LedgerDir
	if l.LedgerPath == "" {
		l.LedgerPath = getenv("HLAUNCH_LEDGER_DIR")
	}
	if l.LedgerPath == "" {
		l.LedgerPath = filepath.Join(l.StatePath, "ledger")
	}
	// Both travel to every shim, and into records, as JSON strings, which cannot hold other bytes.
	if !utf8.ValidString(l.StatePath) {
		return nil, fmt.Errorf("%w: --state-dir %q is not UTF-8", worker.ErrInvalid, l.StatePath)
	}
	if !utf8.ValidString(l.LedgerPath) {
		return nil, fmt.Errorf("%w: --ledger-dir %q is not UTF-8", worker.ErrInvalid, l.LedgerPath)
	}
	// Every directory records, ledger entries and key locks live in must be the launcher's alone: under
	// /tmp anyone can make the non-root default first, and records there could be forged or swapped.
	if err := state.CheckTree(l.StatePath, l.WorkersDir(), l.KeysDir(), l.LedgerPath); err != nil {
		return nil, fmt.Errorf("%w: %w", worker.ErrInvalid, err)
	}
	if cfg.KeepBus {
		l.Buses = &placement.Buses{}
	}
	if msg := worker.CheckLimits(cfg.Defaults.Limits); msg != "" {
		return nil, fmt.Errorf("%w: default limits: %s", worker.ErrInvalid, msg)
	}
	// MemTotal is read once: the memory default is a share of it. A host whose meminfo cannot be read has
	// no memory default (the receipt shows none); the other defaults hold.
	memTotal, _ := worker.ReadMemTotal()
	l.Limits = worker.LauncherDefaults(cfg.Defaults.Limits, worker.BuiltinLimits(memTotal))
	l.Cgroups, l.CgroupsErr = cgroup.Detect()
	l.Src = fingerprint.Sources{}
	if l.Cgroups != nil {
		l.Src.CgroupRoot = l.Cgroups.Unified
	}
	// The boot id is read once per Launcher, not once per record verified (a List of 1,000
	// records would read it 1,000 times): it cannot change while this process lives. The machine id can be
	// rewritten on disk (a cloned image given its own id): a List or Ledger pass reads it once for all its
	// records (sources), every other verification reads it anew.
	l.Src = l.Src.KeepBootID()
	return l, nil
}

// Root is the hermes root this launcher resolves profiles in.
func (l *Launcher) Root() string { return l.root }

// StateDir is where worker records live.
func (l *Launcher) StateDir() string { return l.StatePath }

func defaultStateDir(getenv func(string) string) string {
	if d := getenv("HLAUNCH_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/hlaunch"
	}
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "hlaunch")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("hlaunch-%d", os.Geteuid()))
}

// osHome is the OS home (HERMES_REAL_HOME): the launcher's HOME, else the password database's.
func osHome(getenv func(string) string) string {
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return "/"
}

// workerAccount is the launcher's environment as the base of a worker that runs as another uid: HOME,
// USER and LOGNAME name the worker's own account (its passwd entry), not the launcher's, whose home the
// worker cannot use (root's /root). A uid without an entry gets HOME=fallback (the profile's home/, hermes'
// child HOME) and no USER or LOGNAME. It also returns the worker's OS home for HERMES_REAL_HOME ("" leaves
// it unset).
func workerAccount(environ []string, uid uint32, fallback string) ([]string, string) {
	out := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name != "HOME" && name != "USER" && name != "LOGNAME" {
			out = append(out, kv)
		}
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		return append(out, "HOME="+fallback), ""
	}
	return append(out, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username), u.HomeDir
}

// Environ composes the environ the child of spec would get, each entry with its provenance
// (`hlaunch env`). Nothing is started. A ctx already cancelled returns its error (wrapped) before the
// profile is read; the composition itself is one read of the profile's files and is not interrupted.
func (l *Launcher) Environ(ctx context.Context, spec worker.Spec) (profile.Environ, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("environ: %w", context.Cause(ctx))
	}
	env, _, _, err := l.compose(spec)
	return env, err
}

// compose opens spec's profile, decides who its worker runs as (identity) and composes its environ for
// that uid: `hlaunch env` and the launch itself take the same worker uid.
func (l *Launcher) compose(spec worker.Spec) (profile.Environ, *profile.Profile, worker.Identity, error) {
	p, err := profile.Open(l.root, spec.Profile)
	if err != nil {
		return nil, nil, worker.Identity{}, fmt.Errorf("%w: %w", worker.ErrInvalid, err)
	}
	// The home's descriptor is needed only to read the .env; the caller keeps the names (a long-lived
	// sidecar must not hold one descriptor per spawn until the garbage collector finds it).
	defer p.Close()
	id, err := worker.IdentityFor(spec, p, l.cfg.OwnerOnly)
	if err != nil {
		return nil, nil, worker.Identity{}, err
	}
	base, home := l.cfg.Environ, osHome(worker.EnvLookup(l.cfg.Environ))
	if id.OtherUID() {
		base, home = workerAccount(base, id.UID, filepath.Join(p.Home, "home"))
	}
	env, err := profile.Compose(profile.Request{
		Profile:   p,
		Secrets:   string(spec.Secrets),
		Pass:      spec.Pass,
		Env:       spec.Env,
		Inherit:   spec.Inherit,
		Launcher:  base,
		OSHome:    home,
		Policy:    l.policy,
		WorkerUID: id.UID,
	})
	if err != nil {
		return nil, nil, worker.Identity{}, fmt.Errorf("%w: %w", worker.ErrInvalid, err)
	}
	return env, p, id, nil
}
