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
// RemoveParentIfEmpty refuse unmarked directories too. A worker's limits are recorded next to the marker
// (trusted.hlaunch.limits, JSON) so that Load can report them.
//
// # Containerd/cgroups
//
// v2 limits, member lists and counters go through github.com/containerd/cgroups/v3/cgroup2, wrapped behind
// Group. Directory creation (mkdir must fail on an existing worker), markers, cgroup.kill, cgroup.freeze
// with a context, the clone3 directory fd and the v1 files are done with x/sys/unix: the library's
// NewManager uses MkdirAll and writes subtree_control from the hierarchy root down, outside our parent, and
// its cgroup1 controllers expect each hierarchy at <root>/<controller> and re-read mountinfo per call.
package cgroup
