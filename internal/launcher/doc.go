// Package launcher carries out one launch: it validates a Spec, composes the child's environ from the target
// profile, places the child (systemd scope, raw cgroup, or degraded), starts it, captures its identity and
// returns a receipt. It also stops, signals and waits for workers, always through their verified identity.
package launcher
