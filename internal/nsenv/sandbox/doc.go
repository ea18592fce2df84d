// Package sandbox builds the Linux namespaces and mounts a sandboxed worker runs in: the clone flags
// (SysProcAttr), the checks made in the parent (Validate), and, inside the init stub, the read-only view of
// the host in which only the target profile exists under the hermes root (mount*.go), the covers and
// hidden paths, and the hardening of the process (sandbox_harden_linux.go, sandbox_inherit_linux.go). It
// knows nothing of environ composition (internal/nsenv/profile), so internal/handshake's init stub links only this.
package sandbox
