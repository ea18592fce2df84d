package sidecar

import (
	"context"
	"fmt"
	"slices"
)

// Peer is the identity of a connected client as the kernel reported it when it connected (SO_PEERCRED and
// SO_PEERGROUPS): it cannot be forged by the client and does not change if the client later calls setuid.
type Peer struct {
	PID    int32    // the connecting process (informational: it may have exited since)
	UID    uint32   // effective uid at connect time
	GID    uint32   // effective gid at connect time
	Groups []uint32 // supplementary groups at connect time; nil when the kernel does not report them
}

// authPolicy decides which peers are served: the socket owner (the sidecar's euid), root, and members of the
// socket group. Everyone else is refused, even if a mistaken chmod let them connect.
type authPolicy struct {
	ownerUID uint32
	group    int64 // -1: no socket group
}

// allow reports whether p may use the API, and why not when it may not.
func (a authPolicy) allow(p Peer) (bool, string) {
	switch {
	case p.UID == a.ownerUID:
		return true, ""
	case p.UID == 0:
		return true, ""
	case a.group >= 0 && (int64(p.GID) == a.group || slices.Contains(p.Groups, uint32(a.group))):
		return true, ""
	case a.group >= 0:
		return false, fmt.Sprintf("uid %d is not the owner (%d), not root, and not in group %d", p.UID, a.ownerUID, a.group)
	default:
		return false, fmt.Sprintf("uid %d is not the owner (%d) and not root", p.UID, a.ownerUID)
	}
}

// connAuth is stored in each connection's context by ConnContext: the peer and the decision, made once per
// connection.
type connAuth struct {
	peer    Peer
	ok      bool
	reason  string
	credErr error   // SO_PEERCRED failed: the connection is refused
	fds     *fdConn // descriptors the client passed (SCM_RIGHTS), when the listener keeps them
}

type connAuthKey struct{}

func withConnAuth(ctx context.Context, a *connAuth) context.Context {
	return context.WithValue(ctx, connAuthKey{}, a)
}

func connAuthFrom(ctx context.Context) *connAuth {
	a, _ := ctx.Value(connAuthKey{}).(*connAuth)
	return a
}
