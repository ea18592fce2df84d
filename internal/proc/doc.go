// Package proc is how hlaunch starts and ends a child process, below any protocol: Spawn (syscall.ForkExec
// with the child's own CPU set, stdio and nothing else), a Proc that can be signalled only until it is
// reaped, Hold (the target started traced and stopped at its execve, before its first instruction, until
// its parent has placed it), LookPath in the CHILD's PATH, the shell's exit codes (128+N for signal N, 126
// and 127 for exec failures), and MarkInheritedCloexec, which keeps every inherited descriptor above 2 out
// of a worker (close_range(CLOSE_RANGE_CLOEXEC), or a walk of /proc/self/fd where the kernel lacks it).
//
// The child protocols build on it: internal/handshake (the launcher and the init stub) and the shim's
// (the launcher and a worker's shim).
package proc
