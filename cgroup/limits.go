package cgroup

// Limits are the resource limits of one worker's cgroup. A zero field means "no limit set".
// A limit that cannot be applied on this host is an error, never silently ignored.
type Limits struct {
	// Memory is the hard memory limit in bytes (v2 memory.max, v1 memory.limit_in_bytes).
	Memory int64 `json:"memory,omitempty"`
	// MemoryHigh is the memory throttling threshold in bytes (v2 memory.high, v1 memory.soft_limit_in_bytes).
	MemoryHigh int64 `json:"memory_high,omitempty"`
	// Pids is the maximum number of tasks (v2 and v1 pids.max).
	Pids int64 `json:"pids,omitempty"`
	// CPUWeight is the relative CPU weight, 1..10000 (v2 cpu.weight, v1 cpu.shares scaled).
	CPUWeight uint64 `json:"cpu_weight,omitempty"`
	// CPUs is the CPU bandwidth in cores, e.g. 0.5 (v2 cpu.max, v1 cpu.cfs_quota_us/cfs_period_us).
	CPUs float64 `json:"cpus,omitempty"`
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }
