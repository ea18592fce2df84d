// Package landlock confines a sandboxed worker with Landlock's scopes (Landlock ABI 6, Linux 6.12): a
// worker may neither connect to an abstract Unix socket nor signal a process outside its own Landlock
// domain. Abstract socket names live in the network namespace, with no permission bits: with the host's
// network (--net host) every host service listening on one (an X server's @/tmp/.X11-unix/X0, a
// container shim's) would answer the worker. The scopes need no rule and no path: a ruleset with only
// its scoped field set, applied to the thread that starts the target.
package landlock
