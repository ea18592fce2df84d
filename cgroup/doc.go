// Package cgroup places a worker in its own cgroup on unified (v2), hybrid and legacy (v1) hosts, applies its
// limits, and freezes, kills, observes and removes it. It never touches anything outside the configured
// parent. The v1/v2 split lives inside this package, not in its callers.
package cgroup
