package systemd

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// ScopeSpec describes one transient scope. Zero values mean "not set": systemd's defaults apply.
type ScopeSpec struct {
	// Unit is the scope's name and must end in ".scope" (see ScopeName).
	Unit string
	// Slice places the scope; "" leaves systemd's default (app.slice for a user manager, system.slice).
	Slice string
	// Description is shown by systemctl; "" lets systemd derive one.
	Description string
	// PIDs are the processes the scope adopts; at least one. The manager must be able to see them (they
	// must be in its cgroup namespace), and they should be parked so nothing runs before they are placed.
	PIDs []uint32
	// MemoryMax and MemoryHigh are byte limits; 0 means unset, negative is refused.
	MemoryMax, MemoryHigh int64
	// TasksMax limits the number of tasks; 0 means unset.
	TasksMax uint64
	// CPUWeight is 1..10000; 0 means unset.
	CPUWeight uint64
	// CPUQuotaPerSecUSec is CPU time per second in microseconds (1000000 = one CPU); 0 means unset.
	CPUQuotaPerSecUSec uint64
	// RuntimeMax, when set, has the manager stop the scope that long after it started (RuntimeMaxSec=):
	// SIGTERM to every process in it, SIGKILL StopTimeout later (TimeoutStopSec=, which also applies to
	// any other stop of the scope; 0 leaves the manager's default).
	RuntimeMax, StopTimeout time.Duration
	// NoInfo skips reading the scope's InvocationID once its job is done, a round trip to the manager:
	// StartScope then returns a ScopeInfo with only Unit set (a foreground launch records nothing).
	NoInfo bool
}

// Validate checks s without talking to systemd.
func (s ScopeSpec) Validate() error {
	if err := ValidUnitName(s.Unit); err != nil {
		return err
	}
	if !strings.HasSuffix(s.Unit, ".scope") {
		return fmt.Errorf("%w: unit %q does not end in .scope", ErrBadSpec, s.Unit)
	}
	if s.Slice != "" {
		if err := ValidUnitName(s.Slice); err != nil || !strings.HasSuffix(s.Slice, ".slice") {
			return fmt.Errorf("%w: slice %q is not a valid .slice name", ErrBadSpec, s.Slice)
		}
	}
	switch {
	case len(s.PIDs) == 0:
		return fmt.Errorf("%w: no PIDs", ErrBadSpec)
	case s.MemoryMax < 0 || s.MemoryHigh < 0:
		return fmt.Errorf("%w: negative memory limit", ErrBadSpec)
	case s.RuntimeMax < 0 || s.StopTimeout < 0:
		return fmt.Errorf("%w: negative RuntimeMax or StopTimeout", ErrBadSpec)
	case s.CPUWeight > 10000:
		return fmt.Errorf("%w: CPUWeight %d is above 10000", ErrBadSpec, s.CPUWeight)
	}
	if slices.Contains(s.PIDs, 0) {
		return fmt.Errorf("%w: PID 0", ErrBadSpec)
	}
	return nil
}

// properties turns s into the StartTransientUnit property list.
func (s ScopeSpec) properties() []sdbus.Property {
	prop := func(name string, v any) sdbus.Property {
		return sdbus.Property{Name: name, Value: godbus.MakeVariant(v)}
	}
	ps := []sdbus.Property{
		sdbus.PropPids(s.PIDs...),
		// A scope that failed is collected at once, so its name is free for the next launch.
		prop("CollectMode", "inactive-or-failed"),
		prop("MemoryAccounting", true),
	}
	if s.Description != "" {
		ps = append(ps, sdbus.PropDescription(s.Description))
	}
	if s.Slice != "" {
		ps = append(ps, sdbus.PropSlice(s.Slice))
	}
	if s.MemoryMax > 0 {
		ps = append(ps, prop("MemoryMax", uint64(s.MemoryMax)))
	}
	if s.MemoryHigh > 0 {
		ps = append(ps, prop("MemoryHigh", uint64(s.MemoryHigh)))
	}
	if s.TasksMax > 0 {
		ps = append(ps, prop("TasksAccounting", true), prop("TasksMax", s.TasksMax))
	}
	if s.CPUWeight > 0 {
		ps = append(ps, prop("CPUWeight", s.CPUWeight))
	}
	if s.CPUQuotaPerSecUSec > 0 {
		ps = append(ps, prop("CPUQuotaPerSecUSec", s.CPUQuotaPerSecUSec))
	}
	if s.RuntimeMax > 0 {
		ps = append(ps, prop("RuntimeMaxUSec", uint64(s.RuntimeMax.Microseconds())))
	}
	if s.StopTimeout > 0 {
		ps = append(ps, prop("TimeoutStopUSec", uint64(s.StopTimeout.Microseconds())))
	}
	return ps
}

// ScopeInfo is what systemd reports about a started scope.
type ScopeInfo struct {
	// Unit is the scope's name.
	Unit string
	// InvocationID is the 128-bit id of this activation as 32 lower-case hex digits; it changes every time
	// a unit of this name is started, so it tells two scopes of one name apart.
	InvocationID string
}

// StartScope creates the transient scope s.Unit holding s.PIDs (job mode "fail") and waits for the job.
// A leftover unit of the same name that is failed or inactive is reset and the start retried once; an
// active one is ErrUnitExists. A job result other than "done" is ErrJobFailed.
func (c *Conn) StartScope(ctx context.Context, s ScopeSpec) (ScopeInfo, error) {
	if err := s.Validate(); err != nil {
		return ScopeInfo{}, err
	}
	err := c.startScope(ctx, s)
	if dbusErrorName(err) == dbusUnitExists {
		state, serr := c.UnitActive(ctx, s.Unit)
		if serr != nil {
			return ScopeInfo{}, fmt.Errorf("%w: %s: %v (state unknown: %v)", ErrUnitExists, s.Unit, err, serr)
		}
		if state != "failed" && state != "inactive" {
			return ScopeInfo{}, fmt.Errorf("%w: %s is %s", ErrUnitExists, s.Unit, state)
		}
		if rerr := c.ResetFailed(ctx, s.Unit); rerr != nil {
			return ScopeInfo{}, fmt.Errorf("%w: %s is %s and reset-failed failed: %w", ErrUnitExists, s.Unit, state, rerr)
		}
		err = c.startScope(ctx, s)
		if dbusErrorName(err) == dbusUnitExists {
			return ScopeInfo{}, fmt.Errorf("%w: %s still exists after reset-failed: %v", ErrUnitExists, s.Unit, err)
		}
	}
	if err != nil {
		return ScopeInfo{}, err
	}
	if s.NoInfo {
		return ScopeInfo{Unit: s.Unit}, nil
	}
	return c.scopeInfo(ctx, s.Unit)
}

// startScope sends one StartTransientUnit and waits for its job.
func (c *Conn) startScope(ctx context.Context, s ScopeSpec) error {
	// Buffered: go-systemd sends the result while holding its job lock; an unbuffered channel nobody reads
	// any more (ctx expired) would block that send forever and wedge every later job (go-systemd #429,
	// runc #1780).
	ch := make(chan string, 1)
	if _, err := c.sd.StartTransientUnitContext(ctx, s.Unit, "fail", s.properties(), ch); err != nil {
		if dbusErrorName(err) == dbusUnitExists {
			return err
		}
		return fmt.Errorf("start transient unit %s: %w", s.Unit, err)
	}
	return waitJob(ctx, ch, "start", s.Unit)
}

// waitJob waits for a job result or the context.
func waitJob(ctx context.Context, ch <-chan string, verb, unit string) error {
	select {
	case r := <-ch:
		if r != "done" {
			return fmt.Errorf("%w: %s %s: result %q", ErrJobFailed, verb, unit, r)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, ctx.Err())
	}
}

// scopeInfo reads the InvocationID of a started scope. (A member's cgroup is read from
// /proc/<pid>/cgroup, in the caller's own cgroup namespace, not from the manager's ControlGroup.)
func (c *Conn) scopeInfo(ctx context.Context, unit string) (ScopeInfo, error) {
	p, err := c.sd.GetUnitPropertyContext(ctx, unit, "InvocationID")
	if err != nil {
		return ScopeInfo{}, fmt.Errorf("%s: read InvocationID: %w", unit, err)
	}
	id, ok := p.Value.Value().([]byte)
	if !ok || len(id) != 16 {
		return ScopeInfo{}, fmt.Errorf("%s: InvocationID is %v, not 16 bytes", unit, p.Value)
	}
	return ScopeInfo{Unit: unit, InvocationID: hex.EncodeToString(id)}, nil
}

// StopUnit stops unit (job mode "replace") and waits for the job. A unit systemd does not know is
// ErrNoSuchUnit.
func (c *Conn) StopUnit(ctx context.Context, unit string) error {
	ch := make(chan string, 1) // buffered: see startScope
	if _, err := c.sd.StopUnitContext(ctx, unit, "replace", ch); err != nil {
		return c.unitErr("stop", unit, err)
	}
	return waitJob(ctx, ch, "stop", unit)
}

// KillUnit sends sig to every process of unit.
func (c *Conn) KillUnit(ctx context.Context, unit string, sig syscall.Signal) error {
	if err := c.sd.KillUnitWithTarget(ctx, unit, sdbus.All, int32(sig)); err != nil {
		return c.unitErr("kill", unit, err)
	}
	return nil
}

// UnitActive returns the unit's ActiveState ("active", "activating", "deactivating", "inactive",
// "failed", ...). A unit systemd does not know reads as "inactive", as with systemctl is-active.
func (c *Conn) UnitActive(ctx context.Context, unit string) (state string, err error) {
	p, err := c.sd.GetUnitPropertyContext(ctx, unit, "ActiveState")
	if err != nil {
		return "", c.unitErr("read ActiveState of", unit, err)
	}
	s, ok := p.Value.Value().(string)
	if !ok {
		return "", fmt.Errorf("%s: ActiveState is %v, not a string", unit, p.Value)
	}
	return s, nil
}

// ResetFailed clears the failed state of unit, so a failed leftover is unloaded and its name is free.
func (c *Conn) ResetFailed(ctx context.Context, unit string) error {
	if err := c.sd.ResetFailedUnitContext(ctx, unit); err != nil {
		return c.unitErr("reset-failed", unit, err)
	}
	return nil
}

// unitErr wraps a D-Bus error, mapping NoSuchUnit to ErrNoSuchUnit.
func (c *Conn) unitErr(verb, unit string, err error) error {
	if dbusErrorName(err) == dbusNoSuchUnit {
		return fmt.Errorf("%w: %s %s: %v", ErrNoSuchUnit, verb, unit, err)
	}
	return fmt.Errorf("%s %s: %w", verb, unit, err)
}
