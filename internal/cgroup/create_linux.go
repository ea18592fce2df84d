package cgroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Detect reads /proc/self/mountinfo once and returns this mount namespace's cgroup layout. Callers keep
// the result for the life of the process; Create never re-reads mountinfo.
func Detect() (*Host, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMountinfo(f)
}

// controllersFor returns the controllers the limits need, in a fixed order.
func controllersFor(l Limits) []string {
	var c []string
	if l.CPUWeight != 0 || l.CPUs != 0 {
		c = append(c, "cpu")
	}
	if l.Memory != 0 || l.MemoryHigh != 0 {
		c = append(c, "memory")
	}
	if l.Pids != 0 {
		c = append(c, "pids")
	}
	return c
}

// limitNames names the limits that need controller c, for ErrUnsupportedLimit messages.
func limitNames(l Limits, c string) string {
	var n []string
	switch c {
	case "memory":
		if l.Memory != 0 {
			n = append(n, "memory")
		}
		if l.MemoryHigh != 0 {
			n = append(n, "memory-high")
		}
	case "pids":
		n = append(n, "pids")
	case "cpu":
		if l.CPUWeight != 0 {
			n = append(n, "cpu-weight")
		}
		if l.CPUs != 0 {
			n = append(n, "cpus")
		}
	}
	return strings.Join(n, ", ")
}

// plan is where one worker's cgroup lives: the v2 controllers to enable and the v1 hierarchies to use.
type plan struct {
	v2Ctrls []string          // controllers served by the v2 tree
	v1      map[string]string // v1 controller -> mount point
}

func (h *Host) plan(l Limits) (plan, error) {
	p := plan{v1: map[string]string{}}
	for _, c := range controllersFor(l) {
		if mp := h.V1[c]; mp != "" && h.Mode != Unified {
			p.v1[c] = mp
			continue
		}
		if h.Unified == "" {
			return p, &ControllerError{c, fmt.Errorf("%w: %s (no %s controller mounted)", ErrUnsupportedLimit, limitNames(l, c), c)}
		}
		p.v2Ctrls = append(p.v2Ctrls, c)
	}
	if h.Mode == Legacy || h.Unified == "" {
		mp := h.V1["freezer"]
		if mp == "" {
			return p, fmt.Errorf("cgroup: legacy host without a freezer hierarchy (needed to kill a tree): %w", ErrNotFound)
		}
		p.v1["freezer"] = mp
	}
	return p, nil
}

// creation records what Create made so that a failure can undo exactly that.
type creation struct {
	dirs []string // in creation order
}

func (c *creation) rollback() {
	for i := len(c.dirs) - 1; i >= 0; i-- {
		// A parent another launcher started using is busy; leaving it is correct.
		_ = rmdir(c.dirs[i])
	}
}

// Create makes the worker cgroup <parent>/<name> and applies lim; see the package doc for where each
// piece lives on each host mode. Directories it creates carry hlaunch's marker. It fails with ErrBadParent,
// ErrNotWritable (the parent, or where it would be made, is not writable by this process), ErrNotOurs
// (parent exists without the marker), ErrExists (worker exists), or ErrUnsupportedLimit, and on
// any failure removes what it made and returns nil.
func (h *Host) Create(parent, name string, lim Limits) (*Group, error) {
	for attempt := 1; ; attempt++ {
		g, err := h.create(parent, name, lim)
		// ENOENT (ENODEV while its removal is under way) under a parent that was there: a concurrent
		// `hlaunch gc` removed it once it was empty (the next launch re-makes it), between our finding it
		// and making the worker in it. What was made is rolled back; the parent is made again, and a
		// parent this Create makes is not removable before its worker is in it (ensureParent), so one
		// retry wins against any number of removals; the bound covers other launchers re-making it. A
		// missing hierarchy fails the same way every time.
		if err == nil || attempt == createAttempts || !(errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV)) {
			return g, err
		}
	}
}

// createAttempts bounds Create's retries of a parent removed under it.
const createAttempts = 5

func (h *Host) create(parent, name string, lim Limits) (*Group, error) {
	parent, err := cleanParent(parent)
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := lim.validate(); err != nil {
		return nil, err
	}
	p, err := h.plan(lim)
	if err != nil {
		return nil, err
	}
	rel := parent + "/" + name
	g := &Group{host: h, path: rel, limits: lim, v1: map[string]string{}}
	var cr creation
	ok := false
	defer func() {
		if !ok {
			cr.rollback()
		}
	}()

	if h.Unified != "" {
		pdir := filepath.Join(h.Unified, parent)
		fresh, err := ensureParent(h.Unified, parent, &cr)
		if err != nil {
			return nil, err
		}
		if len(p.v2Ctrls) > 0 {
			if err := h.enableV2(pdir, p.v2Ctrls, lim); err != nil {
				return nil, err
			}
		}
		g.v2 = filepath.Join(pdir, name)
		if err := makeWorker(g.v2, &cr); err != nil {
			return nil, err
		}
		if err := markFresh(fresh); err != nil {
			return nil, err
		}
	}
	// Co-mounted controllers (cpu,cpuacct) share one directory: create it once.
	made := map[string]string{}
	for _, c := range slices.Sorted(maps.Keys(p.v1)) {
		mp := p.v1[c]
		if d, dup := made[mp]; dup {
			g.v1[c] = d
			continue
		}
		fresh, err := ensureParent(mp, parent, &cr)
		if err != nil {
			return nil, err
		}
		d := filepath.Join(mp, rel)
		if err := makeWorker(d, &cr); err != nil {
			return nil, err
		}
		if err := markFresh(fresh); err != nil {
			return nil, err
		}
		made[mp] = d
		g.v1[c] = d
	}
	g.finish()
	if err := g.applyLimits(p); err != nil {
		return nil, err
	}
	if !lim.IsZero() {
		b, _ := json.Marshal(lim)
		if err := setXattr(g.primary, limitsXattr, limitsXattrU, b); err != nil {
			return nil, err
		}
	}
	if g.id, err = inode(g.primary); err != nil {
		return nil, err
	}
	ok = true
	return g, nil
}

func makeWorker(dir string, cr *creation) error {
	if err := mkdir(dir); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%w: %s", ErrExists, dir)
		}
		return err
	}
	cr.dirs = append(cr.dirs, dir)
	return mark(dir)
}

// enableV2 makes ctrls available to children of pdir by writing pdir's cgroup.subtree_control. If pdir
// itself lacks a controller, the directory above is enabled first, but only while that directory is
// hlaunch's and is not the hierarchy root: hlaunch never writes to a cgroup it does not own.
func (h *Host) enableV2(pdir string, ctrls []string, lim Limits) error {
	sub, err := os.ReadFile(filepath.Join(pdir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	enabled := strings.Fields(string(sub))
	var want []string
	for _, c := range ctrls {
		if !slices.Contains(enabled, c) {
			want = append(want, c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	avail, err := os.ReadFile(filepath.Join(pdir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	var missing []string
	for _, c := range want {
		if !slices.Contains(strings.Fields(string(avail)), c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		up := filepath.Dir(pdir)
		ours := false
		if up != filepath.Clean(h.Unified) && strings.HasPrefix(up, filepath.Clean(h.Unified)+"/") {
			if ours, err = marked(up); err != nil {
				return err
			}
		}
		if !ours {
			return &ControllerError{missing[0], fmt.Errorf("%w: %s (controller %q not available in %s)", ErrUnsupportedLimit,
				limitNames(lim, missing[0]), missing[0], pdir)}
		}
		if err := h.enableV2(up, missing, lim); err != nil {
			return err
		}
	}
	var b strings.Builder
	for i, c := range want {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("+" + c)
	}
	return writeFile(filepath.Join(pdir, "cgroup.subtree_control"), b.String())
}

// Load attaches to an existing worker cgroup at path ("/parent/name", as Group.Path returns) without
// changing anything. It fails with ErrNotFound when the worker's directory is missing and ErrNotOurs when
// it lacks hlaunch's marker.
func (h *Host) Load(path string) (*Group, error) {
	rel, err := cleanParent(path)
	if err != nil {
		return nil, err
	}
	if strings.Count(rel, "/") < 2 {
		// A worker is always <parent>/<name>; refusing a bare parent keeps Delete away from it.
		return nil, fmt.Errorf("%w: %q is not a worker path", ErrBadParent, path)
	}
	g := &Group{host: h, path: rel, v1: map[string]string{}}
	if h.Unified != "" {
		g.v2 = filepath.Join(h.Unified, rel)
		if _, err := os.Lstat(g.v2); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, g.v2)
		}
	}
	for _, c := range []string{"cpu", "freezer", "memory", "pids"} {
		mp := h.V1[c]
		if mp == "" || h.Mode == Unified {
			continue
		}
		d := filepath.Join(mp, rel)
		if _, err := os.Lstat(d); err == nil {
			g.v1[c] = d
		}
	}
	g.finish()
	if g.primary == "" {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, rel)
	}
	ok, err := marked(g.primary)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotOurs, g.primary)
	}
	if b, err := getXattr(g.primary, limitsXattr, limitsXattrU); err == nil && len(b) > 0 {
		_ = json.Unmarshal(b, &g.limits) // a damaged record reads as "no limits recorded"
	}
	if g.id, err = inode(g.primary); err != nil {
		return nil, err
	}
	return g, nil
}
