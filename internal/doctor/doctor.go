package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/linux"
	"github.com/hlaunch/hlaunch/internal/nsenv/sandbox"
	"github.com/hlaunch/hlaunch/internal/placement"
	"github.com/hlaunch/hlaunch/internal/systemd"
	"github.com/hlaunch/hlaunch/internal/worker"
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
	AutoChoice      worker.Mode       `json:"auto_choice"` // what --scope auto would use: scoped, cgroup or degraded
	AutoReason      string            `json:"auto_reason"`
	RestartSafe     bool              `json:"restart_safe"`
	KeptGroups      Check             `json:"kept_groups"` // not OK: a sandboxed worker keeps this launcher's supplementary groups
}

// Check is one probed capability: whether it is there and why.
type Check struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Run reports what this host (h) offers and what --scope auto would choose for a spec of defaults,
// creating nothing. environ is the launcher's environment (the user bus's address), kept the
// supplementary groups its sandboxed workers would keep.
func Run(ctx context.Context, l *placement.Host, defaults worker.Spec, environ []string, kept []int) (Report, error) {
	r := Report{Mounts: map[string]string{}}
	if l.Cgroups == nil {
		r.CgroupMode = "none"
		r.Delegated = Check{false, fmt.Sprintf("no cgroup filesystem: %v", l.CgroupsErr)}
	} else {
		r.CgroupMode = string(l.Cgroups.Mode)
		if l.Cgroups.Unified != "" {
			r.Mounts["unified"] = l.Cgroups.Unified
			if b, err := os.ReadFile(filepath.Join(l.Cgroups.Unified, "cgroup.controllers")); err == nil {
				for _, c := range strings.Fields(string(b)) {
					r.Controllers = append(r.Controllers, "v2:"+c)
				}
			}
			_, err := os.Stat(filepath.Join(l.Cgroups.Unified, "cgroup.kill"))
			r.CgroupKill = err == nil || kernelAtLeast(5, 14)
			r.CloneIntoCgroup = kernelAtLeast(5, 7)
		}
		for c, m := range l.Cgroups.V1 {
			r.Mounts[c] = m
			if !strings.HasPrefix(c, "name=") {
				r.Controllers = append(r.Controllers, "v1:"+c)
			}
		}
		slices.Sort(r.Controllers)
	}
	if fd, err := linux.PidfdOpen(os.Getpid()); err == nil {
		unix.Close(fd)
		r.Pidfd = true
	}
	r.UserNamespaces = userns()
	// A non-root hlaunch never uses the system manager (it may not make scopes there): its line says so
	// rather than showing the user bus under the system bus's name.
	if os.Geteuid() == 0 {
		r.SystemBus = probeBus(ctx, false, environ)
	} else {
		r.SystemBus = Check{false, fmt.Sprintf("not used by uid %d: a non-root hlaunch makes its scopes in its own user manager (user bus)", os.Geteuid())}
	}
	r.UserBus = probeBus(ctx, true, environ)
	r.Linger = linger()
	r.KeptGroups = keptGroupsCheck(kept)
	// What --scope auto would use, decided as a launch decides it (decide), only checked.
	spec := worker.Spec{}.WithDefaults(defaults)
	spec.Scope, spec.RequireScope = worker.ScopeAuto, false
	dry := &dryPlacer{l: l, system: r.SystemBus, user: r.UserBus}
	if l.Cgroups != nil {
		_, _ = dry.Cgroup(spec, "")
		r.Delegated = dry.cgroupCheck
	}
	p, why, err := placement.Decide(ctx, spec, "", dry)
	switch {
	case err != nil:
		r.AutoChoice, r.AutoReason = worker.ModeDegraded, "a launch with these defaults is refused: "+err.Error()
	case p.Mode() == worker.ModeDegraded:
		r.AutoChoice, r.AutoReason = worker.ModeDegraded, why
	default:
		r.AutoChoice, r.AutoReason = p.Mode(), why+": "+p.(checked).detail
	}
	r.RestartSafe = r.AutoChoice == worker.ModeScoped || r.AutoChoice == worker.ModeCgroup
	return r, nil
}

// dryPlacer is doctor's placer: it checks that each placement could be made and creates nothing. The
// managers' answers are the ones doctor probed.
type dryPlacer struct {
	l            *placement.Host
	system, user Check
	cgroupCheck  Check // the last cgroup check's answer
}

// checked is a placement a dry run found possible: its mode and what was checked; nothing exists.
type checked struct {
	placement.NoPlacement
	m      worker.Mode
	detail string
}

func (c checked) Mode() worker.Mode { return c.m }

func (dryPlacer) None() placement.Placement { return placement.NoPlacement{} }

// Cgroup checks the parent as Create would use it (cgroup.Host.CheckParent: the same decision, so the
// same words).
func (d *dryPlacer) Cgroup(spec worker.Spec, _ string) (placement.Placement, error) {
	parent, err := d.l.CgroupParent(spec)
	if err != nil {
		d.cgroupCheck = Check{false, err.Error()}
		return nil, err
	}
	dir := ""
	if parent, err = d.l.Cgroups.CleanParent(parent); err == nil {
		applied, defaults := d.l.LimitsFor(spec)
		err = worker.FitDefaults(applied, defaults, func(lim cgroup.Limits) (err error) {
			dir, err = d.l.Cgroups.CheckParent(parent, lim)
			return err
		})
	}
	if err != nil {
		d.cgroupCheck = Check{false, err.Error()}
		return nil, placement.CgroupRefusal(err)
	}
	d.cgroupCheck = Check{true, fmt.Sprintf("%s (parent %s)", dir, parent)}
	return checked{m: worker.ModeCgroup, detail: d.cgroupCheck.Detail}, nil
}

func (d *dryPlacer) Systemd(_ context.Context, spec worker.Spec, _ bool) (placement.Placement, error) {
	if err := placement.CheckUnit(spec); err != nil {
		return nil, err
	}
	bus := d.system
	if placement.UserManager(spec) {
		bus = d.user
	}
	if !bus.OK {
		return nil, errors.New(bus.Detail)
	}
	return checked{m: worker.ModeScoped, detail: bus.Detail}, nil
}

func probeBus(ctx context.Context, user bool, environ []string) Check {
	cctx, cancel := context.WithTimeout(ctx, placement.ScopeTimeout)
	defer cancel()
	c, err := systemd.Connect(cctx, systemd.ConnectOptions{User: user, UID: os.Geteuid(), Getenv: worker.EnvLookup(environ)})
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

// keptGroupsCheck warns when this launcher's sandboxed workers would keep its supplementary groups (an
// unprivileged launcher's: its user namespace denies setgroups), the same groups a receipt's kept_groups
// names: a socket or file that trusts one of them outside /run serves the worker as it serves the launcher.
func keptGroupsCheck(kept []int) Check {
	if len(kept) == 0 {
		return Check{true, "none: a sandboxed worker keeps no supplementary group of this launcher"}
	}
	return Check{false, fmt.Sprintf("a sandboxed worker keeps this launcher's supplementary groups %s (its user namespace denies setgroups): "+
		"a socket or file of one of them outside /run serves it (remedy: run hlaunch without them: setpriv --clear-groups, a unit's SupplementaryGroups= empty, or as root)",
		strings.Trim(fmt.Sprint(kept), "[]"))}
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
