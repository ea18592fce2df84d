package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/launchflag"
	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
	"github.com/hlaunch/hlaunch/internal/trust"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// maxSpecBytes bounds a --spec document; a launch spec is a few hundred bytes, and reading an unbounded
// stdin into memory would let a confused caller exhaust it.
const maxSpecBytes = 1 << 20

// specFlags holds the flags that describe a launch. Defaults shown in --help are the meaning of the Spec's
// zero values; a flag is copied into the Spec only when it was given, so that a --spec file keeps every
// field the command line does not name.
type specFlags struct {
	profile, secrets, cwd string
	pass, inherit, env    []string
	specFile              string

	placement launchflag.Placement
	unit      string

	memory, memoryHigh string
	pids, cpuWeight    string
	cpus               float64

	sandbox bool
	seccomp string
	rw      []string
	as      string
	titles  bool

	key, timeout, grace, log string
	logMax, stdio            string
	detach                   bool
}

// addEnvFlags registers the flags that decide the child's environment (exec and env share them).
func (f *specFlags) addEnvFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&f.profile, "profile", "p", "", "hermes profile to launch for (\"default\" is the root); required")
	fs.StringVar(&f.secrets, "secrets", string(worker.SecretsProfile), "profile: the target's .env without Tier-1 names; none: without any credential")
	fs.StringArrayVar(&f.pass, "pass", nil, "with --secrets none, add this credential back from the target's .env (repeatable)")
	fs.StringArrayVar(&f.env, "env", nil, "set NAME=VALUE in the child, over the profile's value (repeatable)")
	fs.StringArrayVar(&f.inherit, "inherit", nil, "copy NAME from hlaunch's own environment; credentials and launch-profile settings are refused (repeatable)")
	fs.StringVar(&f.cwd, "cwd", "", "child's working directory (default: hlaunch's)")
	fs.StringVar(&f.specFile, "spec", "", "read a JSON launch spec from FILE (\"-\": stdin); flags given explicitly override its fields")
}

// addExecFlags registers every launch flag: the environment ones plus placement, limits, sandbox and job.
func (f *specFlags) addExecFlags(fs *pflag.FlagSet) {
	f.addEnvFlags(fs)
	f.addPlacementFlags(fs)

	fs.StringVar(&f.memory, "memory", "", fmt.Sprintf("hard memory limit, e.g. 512M, 2G; max: none (default %d%% of the host's memory)", worker.DefaultMemoryPercent))
	fs.StringVar(&f.memoryHigh, "memory-high", "", "memory throttling threshold, e.g. 384M")
	fs.StringVar(&f.pids, "pids", "", fmt.Sprintf("maximum number of tasks in the worker; max: none (default %d)", worker.DefaultPids))
	fs.StringVar(&f.cpuWeight, "cpu-weight", "", fmt.Sprintf("relative CPU weight, 1..10000; max: none of its own (default %d)", worker.DefaultCPUWeight))
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU bandwidth in cores, e.g. 0.5")

	fs.BoolVar(&f.sandbox, "sandbox", false, "new mount, pid, ipc, uts and cgroup namespaces; only the target profile is visible")
	fs.StringVar(&f.seccomp, "seccomp", string(worker.SeccompDefault), "with --sandbox: default (the system-call filter: no mounts, namespaces, keyring, bpf, terminal injection, set-ID modes, ...) or off")
	fs.StringArrayVar(&f.rw, "rw", nil, "with --sandbox: keep this host path writable (repeatable)")
	fs.StringVar(&f.as, "as", "", "UID:GID to drop to before exec (empty capability sets)")
	fs.BoolVar(&f.titles, "tty-titles", false, "with --sandbox in the foreground: let the worker set the terminal's window and icon titles")

	fs.StringVar(&f.key, "key", "", "refuse to start while another worker holding KEY verifies as running")
	fs.StringVar(&f.timeout, "timeout", "", "wall-clock limit (e.g. 30s, 10m): SIGTERM, then the whole cgroup killed after --grace")
	fs.StringVar(&f.grace, "grace", "5s", "time between SIGTERM and the whole-cgroup kill")
	fs.StringVar(&f.log, "log", "", "append stdout and stderr to FILE (rotated at --log-max when a launch opens it and, with --detach, while the worker runs)")
	fs.StringVar(&f.logMax, "log-max", "", "rotate --log at this size, keeping one old file (default 2M)")
	fs.StringVar(&f.stdio, "stdio", "", "with --detach: \"inherit\" gives the worker hlaunch's own stdin, stdout and stderr (default: /dev/null, or --log)")
	fs.BoolVar(&f.detach, "detach", false, "start under a shim, print the receipt as JSON and return at once")
}

// addPlacementFlags registers where the worker goes: the placement flags the sidecar shares
// (launchflag.AddPlacement: --scope and its knobs, --net) and --unit, which names one launch's scope.
func (f *specFlags) addPlacementFlags(fs *pflag.FlagSet) {
	launchflag.AddPlacement(fs, &f.placement, launchflag.ForLaunch)
	fs.StringVar(&f.unit, "unit", "", "systemd unit name without .scope (default hlaunch-<profile>-<id>)")
}

// spec builds the launch spec: the --spec document if one was named, then every flag that was given,
// then argv when the command line has one.
func (f *specFlags) spec(fs *pflag.FlagSet, argv []string, stdin io.Reader) (worker.Spec, error) {
	var s worker.Spec
	if f.specFile != "" {
		var err error
		if s, err = loadSpec(f.specFile, stdin); err != nil {
			return worker.Spec{}, err
		}
	}
	if err := f.apply(fs, &s); err != nil {
		return worker.Spec{}, err
	}
	if len(argv) > 0 {
		s.Argv = append([]string(nil), argv...)
	}
	return s, nil
}

// apply copies every flag that was given on the command line into s. Lists and scalars replace the spec's
// field; --env adds to the spec's env, a flag's value winning for the same name.
func (f *specFlags) apply(fs *pflag.FlagSet, s *worker.Spec) error {
	set := func(name string) bool {
		fl := fs.Lookup(name)
		return fl != nil && fl.Changed
	}
	if set("profile") {
		s.Profile = f.profile
	}
	if set("secrets") {
		s.Secrets = worker.Secrets(f.secrets)
	}
	if set("pass") {
		s.Pass = append([]string(nil), f.pass...)
	}
	if set("inherit") {
		s.Inherit = append([]string(nil), f.inherit...)
	}
	if set("env") {
		env, err := parseEnvFlags(f.env, s.Env)
		if err != nil {
			return err
		}
		s.Env = env
	}
	if set("cwd") {
		s.Cwd = f.cwd
	}
	f.placement.Apply(fs, s)
	if set("unit") {
		s.Unit = f.unit
	}
	if err := f.applyLimits(set, &s.Limits); err != nil {
		return err
	}
	if set("sandbox") {
		s.Sandbox = f.sandbox
	}
	if set("seccomp") {
		s.Seccomp = worker.Seccomp(f.seccomp)
	}
	if set("rw") {
		s.RW = append([]string(nil), f.rw...)
	}
	if set("as") {
		s.User = f.as
	}
	if set("tty-titles") {
		s.TTYTitles = f.titles
	}
	if set("key") {
		s.Key = f.key
	}
	if set("timeout") {
		if err := checkDuration("--timeout", f.timeout); err != nil {
			return err
		}
		s.Timeout = f.timeout
	}
	if set("grace") {
		if err := checkDuration("--grace", f.grace); err != nil {
			return err
		}
		s.Grace = f.grace
	}
	if set("log") {
		s.Log = f.log
	}
	if set("log-max") {
		n, err := cgroup.ParseSize(f.logMax)
		if err != nil || n <= 0 {
			return invalidf("--log-max %q: %s, more than 0", f.logMax, sizeAccepted)
		}
		s.LogMax = n
	}
	if set("stdio") {
		s.Stdio = worker.StdioMode(f.stdio)
	}
	if set("detach") {
		s.Detach = f.detach
	}
	return nil
}

// sizeAccepted is what every size flag takes, for its error line.
const sizeAccepted = "want a size in bytes with an optional K, M, G or T suffix (512M, 2G)"

// applyLimits parses the limit flags; a size the cgroup package cannot parse names its flag.
func (f *specFlags) applyLimits(set func(string) bool, l *cgroup.Limits) error {
	if set("memory") {
		n, err := launchflag.ParseSize("--memory", f.memory)
		if err != nil {
			return invalidf("%v", err)
		}
		l.Memory = n
	}
	if set("memory-high") {
		n, err := cgroup.ParseSize(f.memoryHigh)
		if err != nil {
			return invalidf("--memory-high %q: %s", f.memoryHigh, sizeAccepted)
		}
		l.MemoryHigh = n
	}
	if set("pids") {
		n, err := launchflag.ParseCount("--pids", f.pids)
		if err != nil {
			return invalidf("%v", err)
		}
		l.Pids = n
	}
	if set("cpu-weight") {
		n, err := launchflag.ParseCount("--cpu-weight", f.cpuWeight)
		if err != nil {
			return invalidf("%v", err)
		}
		l.CPUWeight = n
	}
	if set("cpus") {
		if f.cpus < 0 {
			return invalidf("--cpus %g: must not be negative", f.cpus)
		}
		l.CPUs = f.cpus
	}
	return nil
}

// parseEnvFlags adds each --env NAME=VALUE to a copy of base; a malformed one is refused by name.
func parseEnvFlags(flags []string, base map[string]string) (map[string]string, error) {
	env := make(map[string]string, len(base)+len(flags))
	for k, v := range base {
		env[k] = v
	}
	for _, kv := range flags {
		k, v, err := profile.ParseAssignment(kv)
		if err != nil {
			// profile's message already names --env and the value; never print two prefixes.
			if msg := err.Error(); strings.HasPrefix(msg, "--env") {
				return nil, &invalidError{msg: msg}
			}
			return nil, invalidf("--env %q: %v", kv, err)
		}
		env[k] = v
	}
	return env, nil
}

// checkDuration refuses a duration flag that worker.ParseDuration does not accept (parseGrace's check).
func checkDuration(flag, s string) error {
	_, err := parseGrace(flag, s)
	return err
}

// loadSpec reads a --spec document from a file, or from stdin for "-".
func loadSpec(name string, stdin io.Reader) (worker.Spec, error) {
	r := stdin
	if name != "-" {
		// A spec says what runs: a file another uid could change is that uid's launch (internal/trust).
		// Opened non-blocking and checked a regular file, so that a FIFO does not hang the launcher.
		path, err := trust.Resolve(name)
		if errors.Is(err, trust.ErrUntrusted) {
			return worker.Spec{}, invalidf("--spec %s: %v (a spec is taken only from a file that only root or this uid can change)", name, err)
		}
		var f *os.File
		if err == nil {
			f, err = os.OpenFile(path, syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		}
		if err != nil {
			return worker.Spec{}, invalidf("--spec %s: %s (want a JSON launch spec file, or - for stdin)", name, fileProblem(err))
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return worker.Spec{}, invalidf("--spec %s: not a regular file (want a JSON launch spec file, or - for stdin)", name)
		}
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return worker.Spec{}, invalidf("--spec %s: %v", name, err)
	}
	if len(b) > maxSpecBytes {
		return worker.Spec{}, invalidf("--spec %s: larger than %d bytes", name, maxSpecBytes)
	}
	s, err := decodeSpec(b)
	if err != nil {
		return worker.Spec{}, invalidf("--spec %s: %v", name, err)
	}
	return s, nil
}

// fileProblem is what went wrong opening a file, without the syscall's name and the path again.
func fileProblem(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// decodeSpec decodes one JSON launch spec with the launcher's one strict decoder (worker.DecodeSpec),
// the same the sidecar uses: an unknown, repeated or case-variant key is refused rather than ignored,
// because a misspelt "require_scope" or a second "profile" would otherwise launch something else.
func decodeSpec(b []byte) (worker.Spec, error) {
	return worker.DecodeSpec(b)
}
