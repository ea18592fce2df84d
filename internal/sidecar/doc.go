// Package sidecar is the gateway's local daemon: an HTTP/1.1 + JSON API on a Unix socket that spawns workers
// through a launcher.Launcher, tracks them, streams their lifecycle as NDJSON events, and re-adopts them after
// its own restart.
//
// It is its own package (and not part of cmd/hlaunch) because it is a long-lived server with state of its own
// (the in-memory view of workers, the event ring, the peer-credential policy) that tests drive directly over a
// socket. It holds no launch logic: every spawn, signal, stop and wait goes through the launcher, which
// verifies identities; the sidecar only decides who may ask.
//
// Restart safety does not depend on the sidecar: a detached worker's parent is the launcher's per-worker shim,
// outside the sidecar's session and cgroup, and the shim records the exit status in the state directory. A
// restarted sidecar lists every record, emits adopted, exited or refused for each, and goes on watching.
package sidecar
