// Package peerstore remembers, in the state directory, which peer uid asked for each worker the sidecar
// spawned while the worker may run, so that a restarted sidecar counts an adopted worker against that
// peer's share of running workers again.
package peerstore
