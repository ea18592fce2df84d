package launcher

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/systemd"
	"github.com/hlaunch/hlaunch/nsenv/sandbox"
)

// Report is the `hlaunch doctor` answer.
type Report struct {
	CgroupMode      string            `json:"cgroup_mode"`
	Mounts          map[string]string `json:"mounts"`
	Controllers     []string          `json:"controllers"`       // controllers a worker's limits can use, by hierarchy
	Delegated       Check             `json:"delegated"`         // whether the cgroup parent can be created here
	CgroupKill      bool              `json:"cgroup_kill"`       // cgroup.kill in the v2 tree (kernel 5.14+)
	CloneIntoCgroup bool              `json:"clone_into_cgroup"` // clone3 CLONE_INTO_CGROUP (kernel 5.7+ and a v2 tree)
	Pidfd           bool              `json:"pidfd"`
	UserNamespaces  Check             `json:"user_namespaces"`
	SystemBus       Check             `json:"system_bus"`
	UserBus         Check             `json:"user_bus"`
	Linger          Check             `json:"linger"`
	AutoChoice      string            `json:"auto_choice"` // what --scope auto would use: scoped, cgroup or degraded
	AutoReason      string            `json:"auto_reason"`
	RestartSafe     bool              `json:"restart_safe"`
}

// Check is one probed capability: whether it is there and why.
type Check struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Doctor reports what this host offers and what --scope auto would choose, creating nothing.
func (l *Launcher) Doctor(ctx context.Context) (Report, error) {
	r := Report{Mounts: map[string]string{}}
	if l.host == nil {
		r.CgroupMode = "none"
		r.Delegated = Check{false, fmt.Sprintf("no cgroup filesystem: %v", l.hostErr)}
	} else {
		r.CgroupMode = string(l.host.Mode)
		if l.host.Unified != "" {
			r.Mounts["unified"] = l.host.Unified
			if b, err := os.ReadFile(filepath.Join(l.host.Unified, "cgroup.controllers")); err == nil {
				for _, c := range strings.Fields(string(b)) {
					r.Controllers = append(r.Controllers, "v2:"+c)
				}
			}
			_, err := os.Stat(filepath.Join(l.host.Unified, "cgroup.kill"))
			r.CgroupKill = err == nil || kernelAtLeast(5, 14)
			r.CloneIntoCgroup = kernelAtLeast(5, 7)
		}
		for c, m := range l.host.V1 {
			r.Mounts[c] = m
			if !strings.HasPrefix(c, "name=") {
				r.Controllers = append(r.Controllers, "v1:"+c)
			}
		}
		sort.Strings(r.Controllers)
		r.Delegated = l.delegated()
	}
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err == nil {
		unix.Close(fd)
		r.Pidfd = true
	}
	r.UserNamespaces = userns()
	// A non-root hlaunch never uses the system manager (it may not make scopes there): its line says so
	// rather than showing the user bus under the system bus's name.
	if os.Geteuid() == 0 {
		r.SystemBus = l.probeBus(ctx, false)
	} else {
		r.SystemBus = Check{false, fmt.Sprintf("not used by uid %d: a non-root hlaunch makes its scopes in its own user manager (user bus)", os.Geteuid())}
	}
	r.UserBus = l.probeBus(ctx, true)
	r.Linger = linger()
	useUser := os.Geteuid() != 0 || l.cfg.Defaults.UserManager
	bus := r.SystemBus
	if useUser {
		bus = r.UserBus
	}
	switch {
	case bus.OK:
		r.AutoChoice, r.AutoReason = ModeScoped, "a systemd manager answers: "+bus.Detail
	case r.Delegated.OK:
		r.AutoChoice, r.AutoReason = ModeCgroup, "no systemd manager ("+bus.Detail+"); a writable cgroup parent exists: "+r.Delegated.Detail
	default:
		r.AutoChoice = ModeDegraded
		r.AutoReason = "no systemd manager (" + bus.Detail + ") and no writable cgroup parent (" + r.Delegated.Detail + ")"
	}
	r.RestartSafe = r.AutoChoice != ModeDegraded
	return r, nil
}

// delegated checks that the configured cgroup parent can be used or created (cgroup.Host.CheckParent:
// the same decision Create makes, so the same words).
func (l *Launcher) delegated() Check {
	parent := l.cfg.Defaults.CgroupParent
	if parent == "" {
		var err error
		if parent, err = l.host.DefaultParent(); err != nil {
			return Check{false, err.Error()}
		}
	}
	parent, err := l.host.CleanParent(parent)
	if err != nil {
		return Check{false, err.Error()}
	}
	dir, err := l.host.CheckParent(parent)
	if err != nil {
		return Check{false, err.Error()}
	}
	return Check{true, fmt.Sprintf("%s (parent %s)", dir, parent)}
}

func (l *Launcher) probeBus(ctx context.Context, user bool) Check {
	cctx, cancel := context.WithTimeout(ctx, scopeTimeout)
	defer cancel()
	c, err := systemd.Connect(cctx, systemd.ConnectOptions{User: user, UID: os.Geteuid(), Getenv: envLookup(l.cfg.Environ)})
	if err != nil {
		return Check{false, err.Error()}
	}
	defer c.Close()
	return Check{true, c.Bus()}
}

// userns is the sandbox's own decision (sandbox.UserNamespaces), which SysProcAttr and an unprivileged
// --sandbox follow too.
func userns() Check {
	u := sandbox.UserNamespaces()
	if u.Err != nil {
		return Check{false, u.Err.Error()}
	}
	return Check{true, u.Detail}
}

// linger reports whether the caller's user manager outlives its sessions (loginctl enable-linger).
func linger() Check {
	u, err := user.Current()
	if err != nil {
		return Check{false, err.Error()}
	}
	p := filepath.Join("/var/lib/systemd/linger", u.Username)
	if _, err := os.Stat(p); err != nil {
		return Check{false, fmt.Sprintf("%s absent: the user manager ends with the last session (remedy: loginctl enable-linger %s)", p, u.Username)}
	}
	return Check{true, p}
}

func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var ma, mi int
	fmt.Sscanf(rel, "%d.%d", &ma, &mi)
	return ma > major || (ma == major && mi >= minor)
}
