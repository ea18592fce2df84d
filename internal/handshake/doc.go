// Package handshake is the start-then-exec protocol between the launcher (parent side, parent.go) and the
// re-executed init stub (child side, child.go). The protocol itself is in sync.go; its pipes and framing
// are internal/msgpipe's, which the shim's protocol (internal/shim) uses too.
//
// It exists because a Go program cannot run code between fork and exec. Where the child must be placed
// first (v1 cgroup.procs writes, a systemd scope naming its PID), internal/proc's Hold starts the target traced:
// the kernel stops it at its execve, before its first instruction, and the parent detaches once it has
// placed it. Where it must enter a sandbox, which takes code in the new namespaces before the exec, the
// launcher starts its own binary as the stub, places it, and only then lets it enter the sandbox and exec
// the target.
package handshake
