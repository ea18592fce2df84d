package launcher

import (
	"fmt"
	"os"
	"runtime"

	"github.com/hlaunch/hlaunch/internal/handshake"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/shim"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// MaybeRunInternal runs the hidden roles of the hlaunch binary - the init stub (`__init`) and a worker's
// shim (`__shim`) - and never returns when it does. It returns false for every other invocation. main must
// call it first, before any flag parsing; a test binary that stands in for hlaunch calls it in TestMain.
func MaybeRunInternal() bool {
	// A worker gets stdin, stdout and stderr and nothing else (hermes' close_fds=True): whatever this
	// process inherited without close-on-exec (a supervisor's sockets, a shell's fds) stops here. The
	// descriptors stay usable in this process; they are only closed across execve.
	if err := hproc.MarkInheritedCloexec(); err != nil {
		// A worker would get what we inherited: start nothing rather than leak it.
		fmt.Fprintf(os.Stderr, "hlaunch: marking inherited descriptors close-on-exec: %v\n", err)
		os.Exit(worker.ExitInternal)
	}
	if len(os.Args) != 2 {
		return false
	}
	switch os.Args[1] {
	case handshake.InitArg, shim.Arg:
		// Both live in the worker's cgroup, where their threads count against its --pids: one P keeps
		// them to the few that docs/cli.md allows for, on a host of any size.
		runtime.GOMAXPROCS(1)
	}
	switch os.Args[1] {
	case handshake.InitArg:
		handshake.Main()
	case shim.Arg:
		shim.Main()
	}
	return false
}
