package sidecar

import (
	"context"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
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
	over    error   // the connection is over a limit (ErrTooMany, ErrBusy): every request is answered so
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

// unconfined decides, after the uid check, whether the peer runs where a worker of hlaunch's runs: a
// sandboxed worker (another pid namespace than the sidecar's, whoever it claims to be by uid: a root
// launcher's sandboxed worker is uid 0 to SO_PEERCRED) or a worker's cgroup (one hlaunch made and marked,
// or a running scoped worker's scope). Such peers are refused: a worker must not obtain another worker,
// least of all an unsandboxed one, through the sidecar. A peer whose place cannot be read is refused too.
func (s *Server) unconfined(c net.Conn, p Peer) (bool, string) {
	pl, err := placeOf(c, p.PID)
	if err != nil {
		return false, "cannot tell where the peer runs: " + err.Error()
	}
	if pl.pidNS != s.selfNS {
		return false, fmt.Sprintf("the peer runs in another pid namespace (%s, the sidecar's is %s): a sandboxed worker", pl.pidNS, s.selfNS)
	}
	if pl.outside != "" {
		// Outside the sidecar's cgroup namespace: not in a cgroup or scope of the sidecar's workers, which
		// are all inside it (a scope outside is refused at placement). A scope named as hlaunch names its
		// scopes (another launcher's worker) is still told by its name.
		if id := generatedScopeIn(pl.outside); id != "" {
			return false, fmt.Sprintf("the peer runs in the scope of worker %s (outside the sidecar's cgroup namespace: %s)", id, pl.outside)
		}
		return true, ""
	}
	cg, err := s.b.MarkedCgroup(pl.cgroup)
	if err != nil {
		return false, "cannot tell where the peer runs: " + err.Error()
	}
	if cg != "" {
		return false, fmt.Sprintf("the peer runs in cgroup %s, which hlaunch made for its workers", cg)
	}
	if id := s.scopeOf(pl.cgroup); id != "" {
		return false, fmt.Sprintf("the peer runs in the scope of worker %s", id)
	}
	return true, ""
}

// scopeOf names the scoped worker whose scope contains cg, or "": a running scoped worker the sidecar
// knows (its records, its own spawns), or a scope named as hlaunch names its scopes
// ("hlaunch-[<profile>-]<12 hex>.scope"), which also covers foreground workers, that have no record. A
// scope someone else gave such a name only refuses its own processes.
func (s *Server) scopeOf(cg string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := path.Clean("/" + cg); p != "/"; p = path.Dir(p) {
		if id, ok := s.scopes[p]; ok {
			return id
		}
		if id, ok := generatedScope(path.Base(p)); ok {
			return id
		}
	}
	return ""
}

// generatedScopeIn names the worker whose generated scope name is a component of the cgroup path cg, or "".
func generatedScopeIn(cg string) string {
	for _, c := range strings.Split(cg, "/") {
		if id, ok := generatedScope(c); ok {
			return id
		}
	}
	return ""
}

// generatedScope reports whether unit is a scope name hlaunch generates and gives the worker id in it.
func generatedScope(unit string) (string, bool) {
	rest, ok := strings.CutPrefix(unit, "hlaunch-")
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, ".scope"); !ok || len(rest) < 12 {
		return "", false
	}
	hex := rest[len(rest)-12:]
	if len(rest) > 12 && rest[len(rest)-13] != '-' {
		return "", false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return "w-" + hex, true
}

// noteScope keeps the scopes of the running scoped workers for scopeOf (under s.mu).
func (s *Server) noteScope(r worker.Record) {
	if r.Unit == "" || r.Cgroup == "" {
		return
	}
	if r.State == fingerprint.Running {
		s.scopes[r.Cgroup] = r.ID
	} else if s.scopes[r.Cgroup] == r.ID {
		delete(s.scopes, r.Cgroup)
	}
}
