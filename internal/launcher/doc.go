// Package launcher carries out one launch: it validates a worker.Spec, composes the child's environ from
// the target profile, places the child (internal/placement: systemd scope, raw cgroup, or degraded), starts
// it, captures its identity and returns a receipt. It also stops, signals and waits for workers, always
// through their verified identity, reconciles a worker whose shim was lost, keeps warm slots, reads logs
// back and collects ended workers. It is the orchestration of the floors below it (docs/architecture.md,
// "Floors"): the vocabulary (internal/worker), the records on disk (internal/records), the placements, the
// worker's view and terminal (internal/view, internal/terminal), the log file (internal/workerlog) and the
// shim process (internal/shim), none of which imports it.
package launcher
