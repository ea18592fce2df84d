// Package warmpool keeps the sidecar's warm slots (--warm): workers' shims already started and, for a
// systemd scope, already in their scope, made ahead of the spawns of the default placement and refilled
// after each take, so that a spawn that fits one skips both.
package warmpool
