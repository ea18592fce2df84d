package cgroup

import "fmt"

// Limits are the resource limits of one worker's cgroup. A zero field means "no limit set".
// A limit that cannot be applied on this host is an error, never silently ignored. Create takes no
// negative value; a launch spec uses Unlimited for "no limit, not even the launcher's default".
type Limits struct {
	// Memory is the hard memory limit in bytes (v2 memory.max, v1 memory.limit_in_bytes).
	Memory int64 `json:"memory,omitempty"`
	// MemoryHigh is the memory throttling threshold in bytes (v2 memory.high, v1 memory.soft_limit_in_bytes).
	MemoryHigh int64 `json:"memory_high,omitempty"`
	// Pids is the maximum number of tasks (v2 and v1 pids.max).
	Pids int64 `json:"pids,omitempty"`
	// CPUWeight is the relative CPU weight, 1..10000 (v2 cpu.weight, v1 cpu.shares scaled).
	CPUWeight int64 `json:"cpu_weight,omitempty"`
	// CPUs is the CPU bandwidth in cores, e.g. 0.5 (v2 cpu.max, v1 cpu.cfs_quota_us/cfs_period_us).
	CPUs float64 `json:"cpus,omitempty"`
}

// Unlimited, in a launch spec's Memory, Pids or CPUWeight, asks for no limit where the launcher would
// otherwise apply its default (the spec's -1, the flags' "max").
const Unlimited = -1

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// validate refuses values no kernel would take, before anything is created.
func (l Limits) validate() error {
	switch {
	case l.Memory < 0, l.MemoryHigh < 0, l.Pids < 0, l.CPUWeight < 0, l.CPUs < 0:
		return fmt.Errorf("%w: negative value in %+v", ErrBadLimit, l)
	case l.CPUWeight > 10000:
		return fmt.Errorf("%w: cpu weight %d outside 1..10000", ErrBadLimit, l.CPUWeight)
	case l.CPUs != 0 && l.CPUs*cfsPeriod < 1000:
		return fmt.Errorf("%w: cpus %g below the 1ms-per-period minimum", ErrBadLimit, l.CPUs)
	}
	return nil
}

// cfsPeriod is the CPU bandwidth period in microseconds, the kernel default for v1 and v2.
const cfsPeriod = 100000

// cpuQuota is the quota in microseconds per cfsPeriod for CPUs cores.
func (l Limits) cpuQuota() int64 { return int64(l.CPUs * cfsPeriod) }

// cpuShares maps a v2 weight (1..10000, default 100) to v1 cpu.shares (2..262144, default 1024), the
// inverse of the mapping runc and containerd use in the other direction.
func (l Limits) cpuShares() uint64 { return 2 + uint64(l.CPUWeight-1)*262142/9999 }
