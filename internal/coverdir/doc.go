// Package coverdir keeps the coverage counters of hlaunch's own re-executed roles in a `make cover` build
// (scripts/cover.sh: `go build -cover -tags hlaunchcover`).
//
// A binary built with -cover writes its counters to $GOCOVERDIR when it exits. Two things stop hlaunch's
// roles from doing so on their own: they are started with an environ of their own (the init stub and the
// shim get none of the launcher's; the tests start the CLI and the sidecar with explicit environs), and
// the init stub never exits, it execs the target, often after entering a sandbox that no longer sees
// $GOCOVERDIR. So a cover build names its directory at link time (-X), sets GOCOVERDIR in its own process
// before the coverage runtime reads it (package init runs before main's), and the stub opens its counters
// file before it enters the sandbox (Open) and writes it just before it execs or exits (Flush, Exit).
//
// GOCOVERDIR is set in the role's own process only: a worker's environ is still built from its profile
// alone and never sees it. In every other build Open returns nil, Flush does nothing and Exit is os.Exit.
package coverdir
