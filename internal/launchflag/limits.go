package launchflag

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// CountAccepted is what a count flag (--pids, --cpu-weight, --default-pids, --default-cpu-weight) takes.
const CountAccepted = "a whole number, 0 or more, or max"

// SizeAccepted is what a size flag (--memory, --default-memory) takes.
const SizeAccepted = worker.SizeAccepted

// ParseCount parses the value v of the count flag named flag ("--pids"): decimal digits, or "max" (no
// limit), which is cgroup.Unlimited. Its error is the one line that names the flag and what it takes.
func ParseCount(flag, v string) (int64, error) {
	if strings.EqualFold(strings.TrimSpace(v), "max") {
		return cgroup.Unlimited, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err == nil && n < 0:
		return 0, fmt.Errorf("%s %d: must not be negative: want %s", flag, n, CountAccepted)
	case err != nil || v[0] == '+':
		return 0, fmt.Errorf("%s %q: want %s", flag, v, CountAccepted)
	}
	return n, nil
}

// ParseSize parses the value v of the size flag named flag ("--memory") as cgroup.ParseSize does, except
// that "max" (no limit) is cgroup.Unlimited.
// It is worker.ParseLimitSize, which parses a spec's limits.memory written as a string too.
func ParseSize(flag, v string) (int64, error) {
	return worker.ParseLimitSize(flag, v)
}

// DefaultLimits holds the sidecar's --default-pids, --default-memory and --default-cpu-weight: the limits
// of every spawn that does not set the field. An empty value is the built-in default
// (worker.BuiltinLimits); "max" or 0 is no default.
type DefaultLimits struct {
	Pids, Memory, CPUWeight string
}

// AddDefaultLimits registers the default-limit flags on fs into d.
func AddDefaultLimits(fs *pflag.FlagSet, d *DefaultLimits) {
	fs.StringVar(&d.Pids, "default-pids", "", fmt.Sprintf("tasks limit of every spawn that sets no limits.pids; max or 0: none (default %d)", worker.DefaultPids))
	fs.StringVar(&d.Memory, "default-memory", "", fmt.Sprintf("memory limit of every spawn that sets no limits.memory, e.g. 2G; max or 0: none (default %d%% of the host's MemTotal)", worker.DefaultMemoryPercent))
	fs.StringVar(&d.CPUWeight, "default-cpu-weight", "", fmt.Sprintf("CPU weight, 1..10000, of every spawn that sets no limits.cpu_weight; max or 0: none (default %d)", worker.DefaultCPUWeight))
}

// Limits checks d and returns it as launcher.Config.Defaults.Limits: a flag not given is 0 (the built-in
// default), "max" or 0 is cgroup.Unlimited (no default). A bad value is a FieldError naming its flag.
func (d DefaultLimits) Limits() (cgroup.Limits, error) {
	var l cgroup.Limits
	field := func(name, v string, parse func(string, string) (int64, error), into *int64) error {
		if v == "" {
			return nil
		}
		n, err := parse("--"+name, v)
		if err != nil {
			return &worker.FieldError{Msg: err.Error()}
		}
		if n == 0 {
			n = cgroup.Unlimited
		}
		*into = n
		return nil
	}
	if err := field("default-pids", d.Pids, ParseCount, &l.Pids); err != nil {
		return l, err
	}
	if err := field("default-memory", d.Memory, ParseSize, &l.Memory); err != nil {
		return l, err
	}
	if err := field("default-cpu-weight", d.CPUWeight, ParseCount, &l.CPUWeight); err != nil {
		return l, err
	}
	switch {
	case l.Pids > 0 && l.Pids <= launcher.ShimTasks:
		// Every spawn is detached: its shim's threads count against the limit.
		return l, &worker.FieldError{Msg: fmt.Sprintf("--default-pids %d: every spawn's shim lives in its cgroup and uses up to %d tasks; give at least %d", l.Pids, launcher.ShimTasks, launcher.ShimTasks+1)}
	case l.CPUWeight > 10000:
		return l, &worker.FieldError{Msg: fmt.Sprintf("--default-cpu-weight %d: want 1..10000, or max", l.CPUWeight)}
	}
	return l, nil
}
