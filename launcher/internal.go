package launcher

import (
	"math"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/handshake"
)

// MaybeRunInternal runs the hidden roles of the hlaunch binary - the init stub (`__init`) and a worker's
// shim (`__shim`) - and never returns when it does. It returns false for every other invocation. main must
// call it first, before any flag parsing; a test binary that stands in for hlaunch calls it in TestMain.
func MaybeRunInternal() bool {
	// A worker gets stdin, stdout and stderr and nothing else (hermes' close_fds=True): whatever this
	// process inherited without close-on-exec (a supervisor's sockets, a shell's fds) stops here. The
	// descriptors stay usable in this process; they are only closed across execve.
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if len(os.Args) != 2 {
		return false
	}
	switch os.Args[1] {
	case handshake.InitArg:
		handshake.Main()
	case ShimArg:
		shimMain()
	}
	return false
}
