// Package view decides what a worker sees when it starts: its working directory and the checks of the
// directories it is given (workerdirs.go), and for a sandboxed worker its view of the host, the
// sandbox.Spec built from the spec, the profile and the launcher (what is hidden, covered and protected,
// the Landlock mode and the groups it keeps; sandbox.go). internal/nsenv/sandbox builds that view inside
// the child; this package is the launcher's side of it, pure decisions over the spec and the host.
package view
