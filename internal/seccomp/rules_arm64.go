package seccomp

import "golang.org/x/sys/unix"

// auditArch is the only architecture the filter lets calls through for (a 32-bit arm task is another).
// arm64 has no second ABI under the same audit architecture.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)

// archTable: arm64 has only the *at file calls and no port I/O, so nothing beyond table.
var archTable []rule
