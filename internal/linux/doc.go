// Package linux is the one place hlaunch talks to the kernel's process and cgroup interfaces at the lowest
// level: the retry of interrupted system calls (Retry, RetryErr), pidfds (open, signal, liveness, the
// process an fdinfo names), and the parsers of the kernel files more than one package reads:
// /proc/<pid>/stat (ParseStat: state, start time, any numeric field), /proc/<pid>/cgroup (ParseProcCgroup),
// cgroup.procs (ParseProcs) and flat-keyed cgroup files such as cgroup.events (ParseEvents, KeyedValue).
//
// Parsers take the file's bytes (or an io.Reader) and never read files themselves, so they are pure and
// fuzzed; callers read the files (os.ReadFile) or through a directory
// descriptor. /proc/<pid>/mountinfo has its own parser, internal/mountinfo.
//
// Go installs its signal handlers with SA_RESTART, but the kernel does not restart every call
// (pidfd_send_signal, poll, waitid on some paths), so every raw call that can block goes through Retry.
package linux
