package worker

import (
	"encoding/hex"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// NewWorkerID returns a worker id, "w-" and 12 hex digits, random so that ids never repeat across restarts
// (StartWithID takes one).
func NewWorkerID() string {
	var b [6]byte
	// getrandom(2) itself, not crypto/rand: on its first use crypto/rand arms a one-minute timer (a warning
	// if entropy blocks), and the first timer starts the runtime's network poller, which costs the CLI's
	// launch path a thread and an epoll instance. Six bytes never block once the kernel's pool is ready,
	// and never come back short (reads of up to 256 bytes are whole).
	_, _ = linux.Retry(func() (int, error) { return unix.Getrandom(b[:], 0) })
	return "w-" + hex.EncodeToString(b[:])
}

// IsID reports whether ref is a worker id as NewWorkerID makes them ("w-" and 12 lowercase hex digits) rather
// than a token. Only that spelling names a record file: "W-..." or upper-case hex would be another file
// name for what a caller thinks is the same worker.
func IsID(ref string) bool {
	if !strings.HasPrefix(ref, "w-") || len(ref) != 14 {
		return false
	}
	for _, c := range ref[2:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
