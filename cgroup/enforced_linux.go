package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/sysfile"
)

// unlimitedV1 is the smallest v1 memory value read as "no limit": the kernel shows an unset limit as
// PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages).
const unlimitedV1 = 1 << 62

// Enforced checks that every limit set in want governs process pid. For each controller the limits need,
// it finds the process's cgroup in the hierarchy that holds that controller (the cgroup2 tree when the
// controller is enabled there, else the controller's v1 hierarchy) and reads the limit back: a limit still
// at "max" (or at the kernel's v1 default) is not in effect. It is how a launcher checks limits it asked
// someone else to apply: on a hybrid host a systemd user manager accepts MemoryMax= and TasksMax= for a
// scope and applies neither, because the memory and pids controllers are on v1 hierarchies it cannot
// manage. It returns ErrUnsupportedLimit naming each limit not in effect.
func (h *Host) Enforced(pid int, want Limits) error {
	if want.IsZero() {
		return nil
	}
	b, err := sysfile.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return fmt.Errorf("cgroup: checking limits: %w", err)
	}
	pc, err := linux.ParseProcCgroup(b)
	if err != nil {
		return fmt.Errorf("cgroup: checking limits: /proc/%d/cgroup: %w", pid, err)
	}
	v2, v1 := pc.V2, pc.V1
	var missing []string
	for _, c := range controllersFor(want) {
		dir, onV2 := h.controllerDir(c, v2, v1)
		for _, chk := range limitChecks(want, c, onV2) {
			if dir == "" || !chk.inEffect(dir) {
				missing = append(missing, chk.flag)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not in effect", ErrUnsupportedLimit, strings.Join(missing, ", "))
	}
	return nil
}

// controllerDir returns the directory holding controller c's files for a process with the given paths,
// and whether it is on the cgroup2 tree; "" when the controller governs it nowhere.
func (h *Host) controllerDir(c, v2 string, v1 map[string]string) (string, bool) {
	if h.Unified != "" && v2 != "" {
		d := filepath.Join(h.Unified, v2)
		// A controller is enabled for a v2 cgroup exactly when its interface files exist there.
		if _, err := sysfile.ReadFile(filepath.Join(d, c+".max")); err == nil {
			return d, true
		}
	}
	if m, ok := h.V1[c]; ok {
		if p, ok := v1[c]; ok {
			return filepath.Join(m, p), false
		}
	}
	return "", false
}

// limitCheck reads one limit back.
type limitCheck struct {
	flag string // the flag that asked for it
	file string
	ok   func(v string) bool // whether the file's content shows a limit
}

func (c limitCheck) inEffect(dir string) bool {
	b, err := sysfile.ReadFile(filepath.Join(dir, c.file))
	return err == nil && c.ok(strings.TrimSpace(string(b)))
}

// limitChecks lists the reads that show want's limits for controller c, on v2 or v1.
func limitChecks(want Limits, c string, onV2 bool) []limitCheck {
	notMax := func(v string) bool { return v != "max" && v != "" }
	firstNotMax := func(v string) bool { f := strings.Fields(v); return len(f) > 0 && f[0] != "max" }
	belowV1Max := func(v string) bool { n, err := strconv.ParseInt(v, 10, 64); return err == nil && n < unlimitedV1 }
	var out []limitCheck
	switch c {
	case "memory":
		if want.Memory != 0 {
			if onV2 {
				out = append(out, limitCheck{"--memory", "memory.max", notMax})
			} else {
				out = append(out, limitCheck{"--memory", "memory.limit_in_bytes", belowV1Max})
			}
		}
		if want.MemoryHigh != 0 {
			if onV2 {
				out = append(out, limitCheck{"--memory-high", "memory.high", notMax})
			} else {
				out = append(out, limitCheck{"--memory-high", "memory.soft_limit_in_bytes", belowV1Max})
			}
		}
	case "pids":
		out = append(out, limitCheck{"--pids", "pids.max", notMax})
	case "cpu":
		if want.CPUs != 0 {
			if onV2 {
				out = append(out, limitCheck{"--cpus", "cpu.max", firstNotMax})
			} else {
				out = append(out, limitCheck{"--cpus", "cpu.cfs_quota_us", func(v string) bool { return v != "-1" && v != "" }})
			}
		}
		// A weight equal to the default (100; v1 1024 shares) cannot be told from no weight, and is no limit.
		if want.CPUWeight != 0 && want.CPUWeight != 100 {
			if onV2 {
				w := strconv.FormatUint(want.CPUWeight, 10)
				out = append(out, limitCheck{"--cpu-weight", "cpu.weight", func(v string) bool { return v == w }})
			} else {
				out = append(out, limitCheck{"--cpu-weight", "cpu.shares", func(v string) bool { return v != "1024" && v != "" }})
			}
		}
	}
	return out
}
