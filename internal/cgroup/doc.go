// Package cgroup places a worker in its own cgroup on unified (v2), hybrid and legacy (v1) hosts, applies its
// limits, and freezes, kills, observes and removes it. It never touches anything outside the configured
// parent. The v1/v2 split lives inside this package, not in its callers.
//
// # Where a worker lives
//
// Detect (once per process) reads /proc/self/mountinfo into a Host. Host.Create makes <parent>/<name>:
//
//   - unified: one v2 directory holds membership, kill, events and every limit. The controllers a limit
//     needs are enabled in the parent's cgroup.subtree_control (the parent never holds processes, so the
//     "no internal processes" rule cannot bite). If the parent itself lacks a controller, hlaunch enables it
//     one level up only while that level is hlaunch's own and not the hierarchy root; otherwise the limit is
//     ErrUnsupportedLimit.
//   - hybrid: the v2 directory still gives membership (clone3 CLONE_INTO_CGROUP), cgroup.kill, cgroup.freeze
//     and cgroup.events; each limit goes to the v1 hierarchy its controller is bound to (memory, pids, cpu),
//     or to v2 if the controller is bound there. A worker without limits has no v1 directory at all, so the
//     launch needs no cgroup.procs write (NeedsJoin is false).
//   - legacy: one v1 directory per limit hierarchy plus freezer; the freezer directory is the primary one
//     (Dir, ID). Kill falls back to freeze, SIGKILL, thaw.
//
// # Ownership marker
//
// Every directory Create makes carries the extended attribute trusted.hlaunch=1 (user.hlaunch=1 where
// trusted.* is refused, i.e. an unprivileged, delegated hlaunch). kernfs keeps xattrs on cgroup directories
// in v1 and v2 hierarchies alike and drops them with the directory, and trusted.* needs CAP_SYS_ADMIN, so a
// marker cannot be forged by the workers. An existing parent without it is ErrNotOurs; Load and
// RemoveParentIfEmpty refuse unmarked directories too. A parent Create makes is marked only once its first
// worker is in it, so a concurrent RemoveParentIfEmpty (`hlaunch gc`) can never remove it under that Create:
// an unmarked parent is not its to remove, and a marked one is busy; a Create whose existing parent is
// removed under it makes the parent again, and that attempt wins. A worker's limits are recorded next to
// the marker (trusted.hlaunch.limits, JSON) so that Load can report them.
//
// # Holding a worker's cgroup later
//
// Host.Hold is the one place that decides "this cgroup is this worker's", from a Claim (what was recorded
// at start). A raw cgroup must be the marked directory named after the worker, under a marked parent,
// with the recorded cgroup id. A systemd scope is made by the manager and never carries the marker: it is
// held on the recorded cgroup id (never reused within a boot), the unit's name as the directory's name, and
// the InvocationID where the manager wrote it on the directory; a held scope is never removed here.
//
// # Why not containerd/cgroups
//
// Every cgroup file is read and written here with os and x/sys/unix: directory creation (mkdir must fail on
// an existing worker), markers, limits, member lists, counters, cgroup.kill, cgroup.freeze with a context and
// the clone3 directory fd. containerd/cgroups v3's cgroup2 package brings protobuf and cilium/ebpf, whose
// package init every hlaunch process would pay, and hlaunch starts up to three processes per launch. Its
// NewManager also uses MkdirAll and writes subtree_control from the hierarchy root down, outside our
// parent, and its cgroup1 controllers expect each hierarchy at <root>/<controller> and re-read mountinfo per
// call. ADR 0002 records the decision and its measurement.
package cgroup
