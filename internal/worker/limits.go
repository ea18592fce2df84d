package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

// The built-in default limits, applied to every worker that has a cgroup (a raw cgroup or a systemd scope)
// where neither its spec nor its launcher's Config.Defaults.Limits sets the field (docs/security.md,
// "Default resource bounds"). A worker is hostile: without them one fork loop takes every PID of the host.
const (
	// DefaultPids is the default pids.max: room for a build's worth of processes and threads, and for a
	// detached worker's shim (ShimTasks), far below any host's kernel.pid_max.
	DefaultPids = 2048
	// DefaultCPUWeight is the default cpu.weight (v2's own default; v1 cpu.shares by cgroup.Limits'
	// mapping), set explicitly so that every worker is a CPU group of its own and one busy worker gets no
	// more CPU than another.
	DefaultCPUWeight = 100
	// DefaultMemoryPercent is the default memory.max as a share of the host's MemTotal, rounded down to a
	// MiB.
	DefaultMemoryPercent = 50
)

// BuiltinLimits are the built-in defaults on a host with memTotal bytes of memory (0: unknown, no memory
// default). MemTotal is at most 8 PiB (ParseMemTotal), so the product cannot overflow.
func BuiltinLimits(memTotal int64) cgroup.Limits {
	return cgroup.Limits{
		Pids:      DefaultPids,
		CPUWeight: DefaultCPUWeight,
		Memory:    memTotal * DefaultMemoryPercent / 100 &^ (1<<20 - 1),
	}
}

// LauncherDefaults merges a launcher's configured defaults over the built-in ones, field by field: a zero
// field takes the built-in value, cgroup.Unlimited none, any other value is the launcher's default.
func LauncherDefaults(cfg, builtin cgroup.Limits) cgroup.Limits {
	return cgroup.Limits{
		Memory:     pick(cfg.Memory, builtin.Memory),
		MemoryHigh: pick(cfg.MemoryHigh, builtin.MemoryHigh),
		Pids:       pick(cfg.Pids, builtin.Pids),
		CPUWeight:  pick(cfg.CPUWeight, builtin.CPUWeight),
		CPUs:       pickFloat(cfg.CPUs, builtin.CPUs),
	}
}

// EffectiveLimits is the one resolution of a worker's limits: each field of spec as the caller wrote it,
// else the launcher's default (defaults, as LauncherDefaults made them). A spec field of cgroup.Unlimited
// is no limit. It also returns the part that came from defaults, which a placement that cannot hold a
// default may leave out (the receipt then shows it absent); a limit the caller asked for is never left
// out.
func EffectiveLimits(spec, defaults cgroup.Limits) (applied, fromDefaults cgroup.Limits) {
	field := func(s, d int64) (int64, int64) {
		switch {
		case s > 0:
			return s, 0
		case s < 0:
			return 0, 0
		case d > 0:
			return d, d
		}
		return 0, 0
	}
	applied.Memory, fromDefaults.Memory = field(spec.Memory, defaults.Memory)
	applied.MemoryHigh, fromDefaults.MemoryHigh = field(spec.MemoryHigh, defaults.MemoryHigh)
	applied.Pids, fromDefaults.Pids = field(spec.Pids, defaults.Pids)
	applied.CPUWeight, fromDefaults.CPUWeight = field(spec.CPUWeight, defaults.CPUWeight)
	switch {
	case spec.CPUs > 0:
		applied.CPUs = spec.CPUs
	case spec.CPUs == 0 && defaults.CPUs > 0:
		applied.CPUs, fromDefaults.CPUs = defaults.CPUs, defaults.CPUs
	}
	return applied, fromDefaults
}

// withoutController drops the defaults that need controller c (a host or parent without it) from
// applied. It reports false when that changes nothing or leaves a limit the caller asked for that needs c:
// a retry would be refused the same way.
func withoutController(applied, fromDefaults cgroup.Limits, c string) (cgroup.Limits, cgroup.Limits, bool) {
	before := applied
	drop := func(a, d *int64) {
		if *d != 0 {
			*a, *d = 0, 0
		}
	}
	var needs bool
	switch c {
	case "memory":
		drop(&applied.Memory, &fromDefaults.Memory)
		drop(&applied.MemoryHigh, &fromDefaults.MemoryHigh)
		needs = applied.Memory != 0 || applied.MemoryHigh != 0
	case "pids":
		drop(&applied.Pids, &fromDefaults.Pids)
		needs = applied.Pids != 0
	case "cpu":
		drop(&applied.CPUWeight, &fromDefaults.CPUWeight)
		if fromDefaults.CPUs != 0 {
			applied.CPUs, fromDefaults.CPUs = 0, 0
		}
		needs = applied.CPUWeight != 0 || applied.CPUs != 0
	}
	return applied, fromDefaults, applied != before && !needs
}

// FitDefaults calls try with applied and, while try refuses a controller that only defaults need
// (cgroup.ControllerError), again without those defaults: a default this host or parent has no controller
// for is left out (the receipt shows it absent), a limit the caller asked for is refused. Each retry drops
// one controller's defaults, so try runs at most four times.
func FitDefaults(applied, defaults cgroup.Limits, try func(cgroup.Limits) error) error {
	for {
		err := try(applied)
		var ce *cgroup.ControllerError
		if !errors.As(err, &ce) {
			return err
		}
		a, d, ok := withoutController(applied, defaults, ce.Controller)
		if !ok {
			return err
		}
		applied, defaults = a, d
	}
}

// HasLimit reports whether l asks for any limit (cgroup.Unlimited asks for none).
func HasLimit(l cgroup.Limits) bool {
	return l.Memory > 0 || l.MemoryHigh > 0 || l.Pids > 0 || l.CPUWeight > 0 || l.CPUs > 0
}

func pick(cfg, builtin int64) int64 {
	switch {
	case cfg < 0:
		return 0
	case cfg > 0:
		return cfg
	}
	return builtin
}

func pickFloat(cfg, builtin float64) float64 {
	switch {
	case cfg < 0:
		return 0
	case cfg > 0:
		return cfg
	}
	return builtin
}

// ReadMemTotal is the host's MemTotal in bytes, from /proc/meminfo.
func ReadMemTotal() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return ParseMemTotal(f)
}

// ParseMemTotal reads /proc/meminfo text and returns its MemTotal in bytes.
func ParseMemTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("meminfo: MemTotal line %q: want \"<n> kB\"", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > 1<<43 { // 8 PiB: a share of it cannot overflow
			return 0, fmt.Errorf("meminfo: MemTotal %q: not a positive size", f[0])
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	return 0, fmt.Errorf("meminfo: no MemTotal line")
}

// OnlyAsked is applied without the fields that came from defaults: the limits the caller asked for.
func OnlyAsked(applied, fromDefaults cgroup.Limits) cgroup.Limits {
	clear := func(a *int64, d int64) {
		if d != 0 {
			*a = 0
		}
	}
	clear(&applied.Memory, fromDefaults.Memory)
	clear(&applied.MemoryHigh, fromDefaults.MemoryHigh)
	clear(&applied.Pids, fromDefaults.Pids)
	clear(&applied.CPUWeight, fromDefaults.CPUWeight)
	if fromDefaults.CPUs != 0 {
		applied.CPUs = 0
	}
	return applied
}
