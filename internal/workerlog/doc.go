// Package workerlog opens a worker's log file (--log, or the sidecar's <state-dir>/logs/<id>.log) the one
// safe way, beneath its directory without following a symbolic link, rotating a full log to <log>.1 first.
// Both the launcher (a foreground worker's output, and a detached launch that fails early when its log
// cannot be opened) and a detached worker's shim (its copy of the output, which rotates while the worker
// runs) open logs through it, so it stands below both.
package workerlog
