package access

import (
	"errors"
	"fmt"
	"slices"
)

// ErrForbidden: the peer's credentials are not the owner's, root's, or the socket group's.
var ErrForbidden = errors.New("forbidden: peer is not allowed on this socket")

// Peer is the identity of a connected client as the kernel reported it when it connected (SO_PEERCRED and
// SO_PEERGROUPS): it cannot be forged by the client and does not change if the client later calls setuid.
type Peer struct {
	PID    int32    // the connecting process (informational: it may have exited since)
	UID    uint32   // effective uid at connect time
	GID    uint32   // effective gid at connect time
	Groups []uint32 // supplementary groups at connect time; nil when the kernel does not report them
}

// Policy decides which peers are served: the socket owner (the sidecar's euid), root, and members of the
// socket group. Everyone else is refused, even if a mistaken chmod let them connect.
type Policy struct {
	OwnerUID uint32
	Group    int64 // -1: no socket group
}

// Allow reports whether p may use the API, and why not when it may not.
func (a Policy) Allow(p Peer) (bool, string) {
	switch {
	case p.UID == a.OwnerUID:
		return true, ""
	case p.UID == 0:
		return true, ""
	case a.Group >= 0 && (int64(p.GID) == a.Group || slices.Contains(p.Groups, uint32(a.Group))):
		return true, ""
	case a.Group >= 0:
		return false, fmt.Sprintf("uid %d is not the owner (%d), not root, and not in group %d", p.UID, a.OwnerUID, a.Group)
	default:
		return false, fmt.Sprintf("uid %d is not the owner (%d) and not root", p.UID, a.OwnerUID)
	}
}
