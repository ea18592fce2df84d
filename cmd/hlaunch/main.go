// Command hlaunch starts a child for a hermes profile with an environment built only from that profile,
// places it in its own cgroup or systemd scope before its first instruction, and answers later questions
// about it (status, signal, stop, wait) only through its verified identity.
//
// This package is the command-line shell: cobra parses flags into a worker.Spec or launcher.Config and
// prints what the launcher package answers. No launch logic lives here; see docs/cli.md for the commands
// and docs/exit-codes.md for what each exit code means.
package main

import (
	"fmt"
	"os"

	"github.com/hlaunch/hlaunch/internal/launcher"
	"github.com/hlaunch/hlaunch/internal/selfguard"
	"github.com/hlaunch/hlaunch/internal/worker"
)

func main() {
	// The same binary is the init stub and the per-worker shim (`hlaunch __init`, `hlaunch __shim`). Those
	// roles run before cobra exists: the init stub sits between fork and the target's execve, and every
	// allocation or flag parse there is paid on each launch and could write to the caller's stdio.
	if launcher.MaybeRunInternal() {
		return
	}
	args := os.Args[1:]
	if namesExec(args) {
		// A launch holds the caller's environment (the gateway's: the launch profile's keys) while its
		// worker runs, and an unsandboxed worker of the same uid would read it in /proc/<ppid>/environ.
		if err := selfguard.Hide(); err != nil {
			fmt.Fprintf(os.Stderr, "hlaunch: %v\n", err)
			os.Exit(worker.ExitInternal)
		}
	}
	os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
}
