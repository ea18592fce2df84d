package cgroup

// Stats are a worker cgroup's resource counters, read from v2 files or from the v1 hierarchies the worker
// has. A counter the host cannot provide for this worker (for example memory on a hybrid host when the
// worker has no v1 memory cgroup) is zero.
type Stats struct {
	// MemoryCurrent is the current memory use in bytes (v2 memory.current, v1 memory.usage_in_bytes).
	MemoryCurrent uint64 `json:"memory_current"`
	// MemoryPeak is the highest memory use in bytes (v2 memory.peak, v1 memory.max_usage_in_bytes).
	MemoryPeak uint64 `json:"memory_peak"`
	// PidsCurrent is the number of tasks (pids.current).
	PidsCurrent uint64 `json:"pids_current"`
	// CPUUsageNS is the CPU time consumed in nanoseconds (v2 cpu.stat usage_usec*1000, v1 cpuacct.usage).
	CPUUsageNS uint64 `json:"cpu_usage_ns"`
	// OOMKills counts processes killed by the OOM killer in this cgroup (v2 memory.events oom_kill,
	// v1 memory.oom_control oom_kill).
	OOMKills uint64 `json:"oom_kills"`
}
