// Package integration holds hlaunch's real-kernel tests: the real binary, real cgroups, real namespaces,
// a real systemd user manager and a real sidecar. The test binary re-executes itself as the child
// (`<test binary> child-report ...`), so every check of the child's view is made from inside the child.
//
// The tests need root; they skip with a reason otherwise, and CI (CI=true) fails on any skip.
package integration
