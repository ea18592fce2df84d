package peerlimit

import "golang.org/x/sys/unix"

// fdsPerConn is the most descriptors one connection holds: its socket, the descriptors it passed and the
// sidecar keeps (maxFDs), and one more the kernel installs before the sidecar closes it.
const fdsPerConn = 1 + maxFDs + 1

// fdReserve is the descriptors kept for everything but connections: spawns (pipes, pidfds, cgroup
// directories, workers' logs), the watcher's inotify, the manager's bus, the warm slots.
const fdReserve = 512

// Budget returns how many connections to serve at once: want (--max-conns) when RLIMIT_NOFILE holds them
// (with the refusals in flight and fdReserve), raising the soft limit toward the hard one if it must. Go
// already raises the soft limit to the hard one at start, so this only lowers the count where the hard
// limit is small, and says so in the log: a sidecar that ran out of descriptors would fail every spawn.
func Budget(want int, logf func(string, ...any)) int {
	need := uint64((want+rejectSlots)*fdsPerConn + fdReserve)
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		logf("sidecar: RLIMIT_NOFILE: %v: serving up to %d connections unchecked", err, want)
		return want
	}
	if rl.Cur < need && rl.Cur < rl.Max {
		raised := unix.Rlimit{Cur: min(need, rl.Max), Max: rl.Max}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err == nil {
			rl = raised
		}
	}
	if rl.Cur >= need {
		return want
	}
	fit := max((int(rl.Cur)-fdReserve)/fdsPerConn-rejectSlots, 1)
	logf("sidecar: RLIMIT_NOFILE is %d (hard %d): serving at most %d connections at once, not %d (--max-conns)", rl.Cur, rl.Max, fit, want)
	return fit
}
