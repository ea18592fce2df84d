package worker

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/nsenv/profile"
)

// MaxID is the largest uid or gid a launch takes: (uid_t)-1, one above, means "leave unchanged" to
// setresuid and setresgid, so a worker asked to run as 4294967295 would keep the launcher's ids.
const MaxID = 1<<32 - 2

// IDAccepted is what every uid or gid setting takes, for its error line.
const IDAccepted = "want decimal digits, 0..4294967294"

// ParseID parses a uid or gid that reaches a system call: decimal digits only (no sign, no '+', no
// spaces, no base prefix), at most MaxID; leading zeros are refused, so that each id has one spelling.
// Its error is the phrase that follows the setting's name and value. It is the one parser of such ids
// (--as, the spec's user, the sidecar's --socket-group).
func ParseID(v string) (uint32, error) {
	if v == "" || len(v) > 10 {
		return 0, fmt.Errorf("not an id (%s)", IDAccepted)
	}
	var n uint64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not an id (%s)", IDAccepted)
		}
		n = n*10 + uint64(c-'0')
	}
	if len(v) > 1 && v[0] == '0' {
		return 0, fmt.Errorf("not an id: leading zero (%s)", IDAccepted)
	}
	if n > MaxID {
		return 0, fmt.Errorf("out of range (%s)", IDAccepted)
	}
	return uint32(n), nil
}

// ParseUser parses UID:GID (--as, the spec's user) with ParseID for each half.
func ParseUser(v string) (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, fmt.Errorf("want UID:GID (%s each)", IDAccepted)
	}
	if uid, err = ParseID(u); err != nil {
		return 0, 0, fmt.Errorf("uid %q: %w", u, err)
	}
	if gid, err = ParseID(g); err != nil {
		return 0, 0, fmt.Errorf("gid %q: %w", g, err)
	}
	return uid, gid, nil
}

// Identity is who a worker runs as (docs/security.md, "Privilege follows the profile").
type Identity struct {
	// UID and gid are the worker's host ids (a sandbox of an unprivileged launcher maps the launcher's).
	UID, gid uint32
	// drop makes the worker (never its shim) set uid:gid with no supplementary groups before its exec;
	// false keeps the launcher's own credentials.
	drop bool
	// AsUID and AsGID are the ids a sandbox drops to inside its user namespace (an unprivileged
	// launcher's --as), valid when AsSet.
	AsUID, AsGID uint32
	AsSet        bool
}

// Credential is the SysProcAttr credential of an unsandboxed worker, nil when it keeps the launcher's.
func (id Identity) Credential() *syscall.Credential {
	if !id.drop {
		return nil
	}
	return &syscall.Credential{Uid: id.UID, Gid: id.gid, Groups: []uint32{}}
}

// OtherUID reports whether the worker runs as another uid than the launcher's (a root launcher's worker of
// a user's home). Such a worker must not be in the launcher's terminal session: it gets a pty of its own,
// as a sandbox does (docs/security.md, "The terminal and the session").
func (id Identity) OtherUID() bool { return id.drop && id.UID != uint32(os.Geteuid()) }

// IdentityFor is the one rule for every worker's credentials, sandboxed or not, foreground or detached, every
// placement, CLI and sidecar:
//   - --as UID:GID (spec field user) when given. An unprivileged launcher's unsandboxed worker cannot be
//     another uid or gid than the launcher's, and is refused; its sandbox maps the launcher's uid and
//     drops to the ids inside. A launcher with Config.OwnerOnly (ownerOnly) (a sidecar without --allow-as) refuses
//     any other ids than the home owner's.
//   - else, for a root launcher, the owner uid and the group gid of the profile home, with every
//     supplementary group dropped. A sandbox refuses a home owned by root or of group root (it never
//     runs as host root unless asked); an unsandboxed worker of a root-owned home is root (its owner),
//     and one of a home of another owner but group root is refused.
//   - else the launcher's own uid and gid.
//
// ownerOnly is the launcher's Config.OwnerOnly.
func IdentityFor(spec Spec, p *profile.Profile, ownerOnly bool) (Identity, error) {
	euid, egid := uint32(os.Geteuid()), uint32(os.Getegid())
	owner, group := p.Owner()
	if spec.User != "" {
		uid, gid, err := ParseUser(spec.User)
		if err != nil {
			return Identity{}, &FieldError{Msg: fmt.Sprintf("--as %q: %v", spec.User, err)}
		}
		if ownerOnly && (uid != owner || gid != group) {
			return Identity{}, &FieldError{Msg: fmt.Sprintf("--as %s: this sidecar runs each worker as its home's owner (%d:%d for %s); `hlaunch sidecar --allow-as` lets a caller choose", spec.User, owner, group, p.Home)}
		}
		switch {
		case euid == 0:
			return Identity{UID: uid, gid: gid, drop: true, AsUID: uid, AsGID: gid, AsSet: true}, nil
		case spec.Sandbox:
			return Identity{UID: euid, gid: egid, AsUID: uid, AsGID: gid, AsSet: true}, nil
		case uid != euid || gid != egid:
			return Identity{}, &FieldError{Msg: fmt.Sprintf("--as %s: an unprivileged launcher (uid %d, gid %d) cannot run an unsandboxed worker as another uid or gid (leave --as out, or add --sandbox)", spec.User, euid, egid)}
		}
		return Identity{UID: euid, gid: egid}, nil
	}
	if euid != 0 {
		return Identity{UID: euid, gid: egid}, nil
	}
	if spec.Sandbox {
		if owner == 0 {
			return Identity{}, fmt.Errorf("%w: --sandbox: the profile home %s is owned by root, and a sandboxed worker does not run as host root unless asked: pass --as UID:GID (--as 0:0 for root)", ErrInvalid, p.Home)
		}
		// The group is refused like the user: a home made by root and handed over with `chown user dir`
		// keeps group root, and a worker of gid 0 reads and writes what the root group may.
		if group == 0 {
			return Identity{}, fmt.Errorf("%w: --sandbox: the profile home %s has group root, and a sandboxed worker does not run as host gid 0 unless asked: chgrp the home, or pass --as UID:GID", ErrInvalid, p.Home)
		}
	} else if owner != 0 && group == 0 {
		return Identity{}, fmt.Errorf("%w: the profile home %s is owned by uid %d with group root, and its worker runs as the home's owner and group, never as gid 0 unless asked: chgrp the home, or pass --as UID:GID", ErrInvalid, p.Home, owner)
	}
	return Identity{UID: owner, gid: group, drop: true, AsUID: owner, AsGID: group, AsSet: true}, nil
}
