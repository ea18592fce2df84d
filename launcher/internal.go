package launcher

import (
	"os"

	"github.com/hlaunch/hlaunch/internal/handshake"
)

// MaybeRunInternal runs the hidden roles of the hlaunch binary - the init stub (`__init`) and a worker's
// shim (`__shim`) - and never returns when it does. It returns false for every other invocation. main must
// call it first, before any flag parsing; a test binary that stands in for hlaunch calls it in TestMain.
func MaybeRunInternal() bool {
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
