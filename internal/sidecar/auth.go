package sidecar

import (
	"context"
	"fmt"
	"net"
	"path"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/sidecar/access"
	"github.com/hlaunch/hlaunch/internal/sidecar/peerlimit"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// connAuth is stored in each connection's context by ConnContext: the peer and the decision, made once per
// connection.
type connAuth struct {
	peer    access.Peer
	ok      bool
	reason  string
	credErr error           // SO_PEERCRED failed: the connection is refused
	over    error           // the connection is over a limit (ErrTooMany, ErrBusy): every request is answered so
	fds     *peerlimit.Conn // descriptors the client passed (SCM_RIGHTS), when the listener keeps them
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
func (s *Server) unconfined(c net.Conn, p access.Peer) (bool, string) {
	pl, err := access.PlaceOf(c, p.PID)
	if err != nil {
		return false, "cannot tell where the peer runs: " + err.Error()
	}
	if pl.PidNS != s.selfNS {
		return false, fmt.Sprintf("the peer runs in another pid namespace (%s, the sidecar's is %s): a sandboxed worker", pl.PidNS, s.selfNS)
	}
	if pl.Outside != "" {
		// Outside the sidecar's cgroup namespace: not in a cgroup or scope of the sidecar's workers, which
		// are all inside it (a scope outside is refused at placement). A scope named as hlaunch names its
		// scopes (another launcher's worker) is still told by its name.
		if id := access.GeneratedScopeIn(pl.Outside); id != "" {
			return false, fmt.Sprintf("the peer runs in the scope of worker %s (outside the sidecar's cgroup namespace: %s)", id, pl.Outside)
		}
		return true, ""
	}
	cg, err := s.b.MarkedCgroup(pl.Cgroup)
	if err != nil {
		return false, "cannot tell where the peer runs: " + err.Error()
	}
	if cg != "" {
		return false, fmt.Sprintf("the peer runs in cgroup %s, which hlaunch made for its workers", cg)
	}
	if id := s.scopeOf(pl.Cgroup); id != "" {
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
		if id, ok := access.GeneratedScope(path.Base(p)); ok {
			return id
		}
	}
	return ""
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
