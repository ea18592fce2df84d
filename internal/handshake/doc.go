// Package handshake is the start-then-exec protocol between the launcher (parent side, parent.go) and the
// re-executed init stub (child side, child.go). The protocol itself is in sync.go.
//
// It exists because a Go program cannot run code between fork and exec: where the child must be placed
// (v1 cgroup.procs writes, a systemd scope naming its PID) or must enter a sandbox before the target
// program's first instruction, the launcher starts its own binary as the stub, places it, and only then
// lets it exec the target.
package handshake
