// Package metrics is what the sidecar tells its operator of its work: the Prometheus metrics of
// GET /v1/metrics (spawns, their errors and latency, events, refused connections, the bounds of
// internal/sidecar/peerlimit and what they refused) in a registry of each server's own, and the matching
// lines of its structured log.
package metrics
