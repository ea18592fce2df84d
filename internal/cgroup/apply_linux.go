package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// applyLimits writes the limits to the hierarchy each controller lives in. The files are few and their
// formats fixed, so they are written directly rather than through containerd/cgroups, whose package init
// every hlaunch process would pay (ADR 0002).
func (g *Group) applyLimits(p plan) error {
	l := g.limits
	for _, c := range p.v2Ctrls {
		var files [][2]string
		switch c {
		case "memory":
			if l.Memory != 0 {
				files = append(files, [2]string{"memory.max", strconv.FormatInt(l.Memory, 10)})
			}
			if l.MemoryHigh != 0 {
				files = append(files, [2]string{"memory.high", strconv.FormatInt(l.MemoryHigh, 10)})
			}
		case "pids":
			files = append(files, [2]string{"pids.max", strconv.FormatInt(l.Pids, 10)})
		case "cpu":
			if l.CPUWeight != 0 {
				files = append(files, [2]string{"cpu.weight", strconv.FormatInt(l.CPUWeight, 10)})
			}
			if l.CPUs != 0 {
				files = append(files, [2]string{"cpu.max", strconv.FormatInt(l.cpuQuota(), 10) + " " + strconv.Itoa(cfsPeriod)})
			}
		}
		for _, f := range files {
			if err := writeFile(filepath.Join(g.v2, f[0]), f[1]); err != nil {
				return limitErr(l, []string{c}, err)
			}
		}
	}
	for c := range p.v1 {
		d := g.v1[c]
		var files [][2]string
		switch c {
		case "memory":
			if l.Memory != 0 {
				files = append(files, [2]string{"memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)})
			}
			if l.MemoryHigh != 0 {
				files = append(files, [2]string{"memory.soft_limit_in_bytes", strconv.FormatInt(l.MemoryHigh, 10)})
			}
		case "pids":
			files = append(files, [2]string{"pids.max", strconv.FormatInt(l.Pids, 10)})
		case "cpu":
			if l.CPUWeight != 0 {
				files = append(files, [2]string{"cpu.shares", strconv.FormatUint(l.cpuShares(), 10)})
			}
			if l.CPUs != 0 {
				files = append(files, [2]string{"cpu.cfs_period_us", strconv.Itoa(cfsPeriod)},
					[2]string{"cpu.cfs_quota_us", strconv.FormatInt(l.cpuQuota(), 10)})
			}
		}
		for _, f := range files {
			if err := writeFile(filepath.Join(d, f[0]), f[1]); err != nil {
				return limitErr(l, []string{c}, err)
			}
		}
	}
	return nil
}

// limitErr turns a missing control file (controller or feature absent, e.g. no CFS bandwidth) into
// ErrUnsupportedLimit naming the limit; other failures (EINVAL on a value) stay what they are.
func limitErr(l Limits, ctrls []string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		var names string
		for i, c := range ctrls {
			if i > 0 {
				names += ", "
			}
			names += limitNames(l, c)
		}
		return &ControllerError{ctrls[0], fmt.Errorf("%w: %s (%v)", ErrUnsupportedLimit, names, err)}
	}
	return fmt.Errorf("cgroup: applying limits: %w", err)
}

// Stats reads the group's counters from wherever each lives: the v2 directory and, where the worker has
// them, the v1 memory, pids and cpuacct directories. A counter whose controller is not there reads 0.
func (g *Group) Stats() (Stats, error) {
	var s Stats
	if g.v2 != "" {
		if v, err := readUint(filepath.Join(g.v2, "pids.current")); err == nil {
			s.PidsCurrent = v
		} else {
			// No pids controller on this tree (hybrid hosts): count the tasks, as pids.current would.
			s.PidsCurrent = countTasks(g.v2)
		}
		if v, ok, err := readKey(filepath.Join(g.v2, "cpu.stat"), "usage_usec"); err == nil && ok {
			s.CPUUsageNS = v * 1000
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return s, fmt.Errorf("cgroup: stats of %s: %w", g.v2, err)
		}
		if v, err := readUint(filepath.Join(g.v2, "memory.current")); err == nil {
			s.MemoryCurrent = v
		}
		if v, err := readUint(filepath.Join(g.v2, "memory.peak")); err == nil { // kernel 5.19+
			s.MemoryPeak = v
		}
		if v, ok, err := readKey(filepath.Join(g.v2, "memory.events"), "oom_kill"); err == nil && ok {
			s.OOMKills = v
		}
	}
	if d := g.v1["memory"]; d != "" {
		var err error
		if s.MemoryCurrent, err = readUint(filepath.Join(d, "memory.usage_in_bytes")); err != nil {
			return s, err
		}
		if s.MemoryPeak, err = readUint(filepath.Join(d, "memory.max_usage_in_bytes")); err != nil {
			return s, err
		}
		if s.OOMKills, _, err = readKey(filepath.Join(d, "memory.oom_control"), "oom_kill"); err != nil {
			return s, err
		}
	}
	if d := g.v1["pids"]; d != "" {
		var err error
		if s.PidsCurrent, err = readUint(filepath.Join(d, "pids.current")); err != nil {
			return s, err
		}
	}
	if d := g.v1["cpuacct"]; d != "" {
		if v, err := readUint(filepath.Join(d, "cpuacct.usage")); err == nil {
			s.CPUUsageNS = v
		}
	} else if d := g.v1["cpu"]; d != "" && g.v2 == "" {
		// cpu co-mounted with cpuacct ("cpu,cpuacct") carries cpuacct.usage in the same directory.
		if v, err := readUint(filepath.Join(d, "cpuacct.usage")); err == nil {
			s.CPUUsageNS = v
		}
	}
	return s, nil
}

// countTasks counts the threads in dir and the cgroups below it.
func countTasks(dir string) uint64 {
	var n uint64
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.threads"))
		if err == nil {
			n += uint64(bytes.Count(b, []byte{'\n'}))
		}
		return nil
	})
	return n
}
