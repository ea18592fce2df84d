package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hlaunch/hlaunch/internal/linux"
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
	_, missing, err := h.inEffect(pid, want)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not in effect", ErrUnsupportedLimit, strings.Join(missing, ", "))
	}
	return nil
}

// InEffect is the part of want that governs process pid, read back as Enforced reads it: each limit not
// in effect is zero in the result. A launcher uses it for the defaults it asked a manager to apply, which
// a worker runs without where the manager cannot apply them (its receipt says which were applied).
func (h *Host) InEffect(pid int, want Limits) (Limits, error) {
	got, _, err := h.inEffect(pid, want)
	return got, err
}

func (h *Host) inEffect(pid int, want Limits) (Limits, []string, error) {
	if want.IsZero() {
		return want, nil, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return Limits{}, nil, fmt.Errorf("cgroup: checking limits: %w", err)
	}
	pc, err := linux.ParseProcCgroup(b)
	if err != nil {
		return Limits{}, nil, fmt.Errorf("cgroup: checking limits: /proc/%d/cgroup: %w", pid, err)
	}
	v2, v1 := pc.V2, pc.V1
	got := want
	var missing []string
	for _, c := range controllersFor(want) {
		dir, onV2 := h.controllerDir(c, v2, v1)
		for _, chk := range limitChecks(want, c, onV2) {
			if dir == "" || !chk.inEffect(dir) {
				missing = append(missing, chk.flag)
				chk.clear(&got)
			}
		}
	}
	return got, missing, nil
}

// controllerDir returns the directory holding controller c's files for a process with the given paths,
// and whether it is on the cgroup2 tree; "" when the controller governs it nowhere.
func (h *Host) controllerDir(c, v2 string, v1 map[string]string) (string, bool) {
	if h.Unified != "" && v2 != "" {
		d := filepath.Join(h.Unified, v2)
		// A controller is enabled for a v2 cgroup exactly when its interface files exist there.
		if _, err := os.ReadFile(filepath.Join(d, c+".max")); err == nil {
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
	flag  string // the flag that asked for it
	file  string
	ok    func(v string) bool // whether the file's content shows a limit
	clear func(l *Limits)     // zeroes the limit in l
}

func (c limitCheck) inEffect(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, c.file))
	return err == nil && c.ok(strings.TrimSpace(string(b)))
}

// limitChecks lists the reads that show want's limits for controller c, on v2 or v1.
func limitChecks(want Limits, c string, onV2 bool) []limitCheck {
	notMax := func(v string) bool { return v != "max" && v != "" }
	firstNotMax := func(v string) bool { f := strings.Fields(v); return len(f) > 0 && f[0] != "max" }
	belowV1Max := func(v string) bool { n, err := strconv.ParseInt(v, 10, 64); return err == nil && n < unlimitedV1 }
	var out []limitCheck
	mem := func(l *Limits) { l.Memory = 0 }
	high := func(l *Limits) { l.MemoryHigh = 0 }
	pids := func(l *Limits) { l.Pids = 0 }
	cpus := func(l *Limits) { l.CPUs = 0 }
	weight := func(l *Limits) { l.CPUWeight = 0 }
	switch c {
	case "memory":
		if want.Memory != 0 {
			if onV2 {
				out = append(out, limitCheck{"--memory", "memory.max", notMax, mem})
			} else {
				out = append(out, limitCheck{"--memory", "memory.limit_in_bytes", belowV1Max, mem})
			}
		}
		if want.MemoryHigh != 0 {
			if onV2 {
				out = append(out, limitCheck{"--memory-high", "memory.high", notMax, high})
			} else {
				out = append(out, limitCheck{"--memory-high", "memory.soft_limit_in_bytes", belowV1Max, high})
			}
		}
	case "pids":
		out = append(out, limitCheck{"--pids", "pids.max", notMax, pids})
	case "cpu":
		if want.CPUs != 0 {
			if onV2 {
				out = append(out, limitCheck{"--cpus", "cpu.max", firstNotMax, cpus})
			} else {
				out = append(out, limitCheck{"--cpus", "cpu.cfs_quota_us", func(v string) bool { return v != "-1" && v != "" }, cpus})
			}
		}
		// A weight equal to v2's default (100) cannot be told from no weight: it is in effect where the cpu
		// controller governs the process at all (its weight file is there to read).
		switch {
		case want.CPUWeight == 0:
		case want.CPUWeight == 100:
			f := "cpu.shares"
			if onV2 {
				f = "cpu.weight"
			}
			out = append(out, limitCheck{"--cpu-weight", f, func(v string) bool { return v != "" }, weight})
		case onV2:
			w := strconv.FormatInt(want.CPUWeight, 10)
			out = append(out, limitCheck{"--cpu-weight", "cpu.weight", func(v string) bool { return v == w }, weight})
		default:
			out = append(out, limitCheck{"--cpu-weight", "cpu.shares", func(v string) bool { return v != "1024" && v != "" }, weight})
		}
	}
	return out
}
