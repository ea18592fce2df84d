// Package doctor is `hlaunch doctor`'s report: what this host offers a launch (cgroup mode and
// controllers, pidfds, user namespaces, the system and user managers, linger, the groups a sandboxed
// worker keeps) and what --scope auto would choose, decided by placement.Decide with a dry placer that
// checks each placement and creates nothing. The launcher's Doctor runs it with its host and defaults.
package doctor
