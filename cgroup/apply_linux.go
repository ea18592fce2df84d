package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// applyLimits writes the limits to the hierarchy each controller lives in. v2 values go through
// containerd/cgroups' cgroup2 manager. v1 values are written directly: cgroup1's controllers insist on
// finding each hierarchy at <root>/<controller> and read /proc/self/mountinfo on every call, while a Host
// already knows the exact mount points; the files are few and their formats fixed.
func (g *Group) applyLimits(p plan) error {
	l := g.limits
	if len(p.v2Ctrls) > 0 {
		res := &cgroup2.Resources{}
		for _, c := range p.v2Ctrls {
			switch c {
			case "memory":
				res.Memory = &cgroup2.Memory{}
				if l.Memory != 0 {
					res.Memory.Max = &l.Memory
				}
				if l.MemoryHigh != 0 {
					res.Memory.High = &l.MemoryHigh
				}
			case "pids":
				res.Pids = &cgroup2.Pids{Max: l.Pids}
			case "cpu":
				res.CPU = &cgroup2.CPU{}
				if l.CPUWeight != 0 {
					w := l.CPUWeight
					res.CPU.Weight = &w
				}
				if l.CPUs != 0 {
					q, per := l.cpuQuota(), uint64(cfsPeriod)
					res.CPU.Max = cgroup2.NewCPUMax(&q, &per)
				}
			}
		}
		m, err := cgroup2.Load(g.path, cgroup2.WithMountpoint(g.host.Unified))
		if err != nil {
			return err
		}
		if err := m.Update(res); err != nil {
			return limitErr(l, p.v2Ctrls, err)
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
		return fmt.Errorf("%w: %s (%v)", ErrUnsupportedLimit, names, err)
	}
	return fmt.Errorf("cgroup: applying limits: %w", err)
}

// Stats reads the group's counters from wherever each lives: the v2 directory (through containerd/cgroups'
// cgroup2 stat reader) and, where the worker has them, the v1 memory, pids and cpuacct directories.
func (g *Group) Stats() (Stats, error) {
	var s Stats
	if g.v2 != "" {
		m, err := cgroup2.Load(g.path, cgroup2.WithMountpoint(g.host.Unified))
		if err != nil {
			return s, err
		}
		mt, err := m.StatFiltered(cgroup2.StatPids | cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents)
		if err != nil {
			return s, fmt.Errorf("cgroup: stats of %s: %w", g.v2, err)
		}
		if mt.Pids != nil {
			s.PidsCurrent = mt.Pids.Current
		}
		if mt.CPU != nil {
			s.CPUUsageNS = mt.CPU.UsageUsec * 1000
		}
		if mt.Memory != nil {
			s.MemoryCurrent, s.MemoryPeak = mt.Memory.Usage, mt.Memory.MaxUsage
		}
		if mt.MemoryEvents != nil {
			s.OOMKills = mt.MemoryEvents.OomKill
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
