package cgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func readTrim(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// checkPlacement: a child started with CgroupFD sees the worker's v2 cgroup in its very first read of
// /proc/self/cgroup; a held child that was joined sees it in every v1 hierarchy too.
func checkPlacement(t *testing.T, h *Host, lim Limits, v1ctrls []string) {
	parent := testParent(t, h)
	g, err := h.Create(parent, "w1", lim)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/" + parent + "/w1"; g.Path() != want {
		t.Fatalf("Path = %q, want %q", g.Path(), want)
	}
	if ok, err := marked(g.Dir()); err != nil || !ok {
		t.Fatalf("worker dir not marked: %v %v", ok, err)
	}
	id, _ := inode(g.Dir())
	if g.ID() == 0 || g.ID() != id {
		t.Fatalf("ID = %d, inode %d", g.ID(), id)
	}
	if g.NeedsJoin() != (len(v1ctrls) > 0) {
		t.Fatalf("NeedsJoin = %v with v1 %v", g.NeedsJoin(), v1ctrls)
	}

	// Unheld: the helper's first action is reading /proc/self/cgroup.
	c := selfCmd("cgroup")
	fd, err := g.OpenFD()
	if err != nil {
		t.Fatal(err)
	}
	c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	out, err := c.Output()
	fd.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := cgroupLines(string(out))[""]; got != g.Path() {
		t.Fatalf("child's first view of its v2 cgroup = %q, want %q\n%s", got, g.Path(), out)
	}

	// Held until joined: every v1 hierarchy used shows the worker too.
	c = selfCmd("held-cgroup")
	var buf strings.Builder
	c.Stdout = &buf
	release := startIn(t, g, c)
	procs, err := g.Procs()
	if err != nil || len(procs) != 1 || procs[0] != c.Process.Pid {
		t.Fatalf("Procs = %v, %v; want [%d]", procs, err, c.Process.Pid)
	}
	release()
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	lines := cgroupLines(buf.String())
	for _, k := range append([]string{""}, v1ctrls...) {
		if lines[k] != g.Path() {
			t.Errorf("child's %q cgroup = %q, want %q\n%s", k, lines[k], g.Path(), buf.String())
		}
	}
	if err := g.WaitEmpty(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]string{g.v2}, g.v1dirs...) {
		if _, err := os.Lstat(d); d != "" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Delete", d)
		}
	}
	if err := h.RemoveParentIfEmpty(parent); err != nil {
		t.Fatal(err)
	}
}

// doubleFork starts the double-forking, setsid tree and waits until both sleeps run.
func doubleFork(t *testing.T, g *Group) *exec.Cmd {
	c := exec.Command("sh", "-c", `read x; setsid sh -c "sleep 100 &" & sleep 100`)
	release := startIn(t, g, c)
	release()
	waitFor(t, 5*time.Second, "two sleeps in the group", func() bool {
		p, _ := g.Procs()
		return count(comms(p), "sleep") == 2
	})
	return c
}

func checkKillTree(t *testing.T, h *Host, lim Limits) {
	parent := testParent(t, h)
	g, err := h.Create(parent, "w-kill", lim)
	if err != nil {
		t.Fatal(err)
	}
	c := doubleFork(t, g)
	procs, _ := g.Procs()
	if err := g.Delete(); !errors.Is(err, ErrPopulated) {
		t.Fatalf("Delete of a live group = %v, want ErrPopulated", err)
	}
	if err := g.Kill(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if pop, err := g.Populated(); err != nil || pop {
		t.Fatalf("after Kill: populated=%v err=%v", pop, err)
	}
	if left, _ := g.Procs(); len(left) != 0 {
		t.Fatalf("after Kill members remain: %v", left)
	}
	for _, p := range procs {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("pid %d still alive after Kill: %s", p, b)
		}
	}
	c.Wait()
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveParentIfEmpty(parent); err != nil {
		t.Fatal(err)
	}
}

func checkSignal(t *testing.T, h *Host, lim Limits) {
	parent := testParent(t, h)
	g, err := h.Create(parent, "w-sig", lim)
	if err != nil {
		t.Fatal(err)
	}
	c := doubleFork(t, g)
	procs, _ := g.Procs()
	// Spare one sleep: it must be the only survivor.
	var spared int
	for _, p := range procs {
		if comms([]int{p})[0] == "sleep" {
			spared = p
			break
		}
	}
	if err := g.Signal(ctxT(t, 5*time.Second), syscall.SIGTERM, spared); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "only the spared member left", func() bool {
		p, _ := g.Procs()
		return len(p) == 1 && p[0] == spared
	})
	if b, _ := os.ReadFile(filepath.Join(g.Dir(), "cgroup.freeze")); g.v2 != "" && strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("group left frozen: cgroup.freeze=%q", b)
	}
	if err := g.Signal(ctxT(t, 5*time.Second), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitEmpty(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
}

func checkRefusals(t *testing.T, h *Host) {
	parent := testParent(t, h)
	for _, bad := range []string{"..", "../x", "/../x", "a/../../x", "/"} {
		if g, err := h.Create(bad, "w", Limits{}); !errors.Is(err, ErrBadParent) || g != nil {
			t.Errorf("Create(%q) = %v, %v; want ErrBadParent", bad, g, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := h.Create(parent, bad, Limits{}); !errors.Is(err, ErrBadParent) {
			t.Errorf("Create name %q = %v; want ErrBadParent", bad, err)
		}
	}
	// A cgroup hlaunch did not create, inside our own test subtree: no marker.
	foreign := filepath.Join(h.Unified, parent)
	if h.Unified == "" {
		foreign = filepath.Join(h.V1["freezer"], parent)
	}
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(parent, "w", Limits{}); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Create under a foreign parent = %v, want ErrNotOurs", err)
	}
	if _, err := os.Lstat(filepath.Join(foreign, "w")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("refused Create left the worker directory")
	}
	if err := h.RemoveParentIfEmpty(parent); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("RemoveParentIfEmpty(foreign) = %v, want ErrNotOurs", err)
	}
	if _, err := h.Load("/" + parent); !errors.Is(err, ErrBadParent) {
		t.Fatalf("Load(a parent) = %v, want ErrBadParent", err)
	}
	if err := os.Mkdir(filepath.Join(foreign, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Load("/" + parent + "/x"); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Load(foreign worker) = %v, want ErrNotOurs", err)
	}
	os.Remove(filepath.Join(foreign, "x"))
	os.Remove(foreign)

	// An existing worker name.
	g, err := h.Create(parent, "w", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if g2, err := h.Create(parent, "w", Limits{}); !errors.Is(err, ErrExists) || g2 != nil {
		t.Fatalf("second Create = %v, %v; want ErrExists", g2, err)
	}
	if _, err := os.Lstat(g.Dir()); err != nil {
		t.Fatal("refused duplicate Create removed the original worker")
	}
	l, err := h.Load(g.Path())
	if err != nil || l.ID() != g.ID() || l.Dir() != g.Dir() {
		t.Fatalf("Load = %+v, %v; want id %d", l, err, g.ID())
	}
	if _, err := h.Load("/" + parent + "/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load(missing) = %v, want ErrNotFound", err)
	}
	if err := h.RemoveParentIfEmpty(parent); !errors.Is(err, ErrPopulated) {
		t.Fatalf("RemoveParentIfEmpty with a worker = %v, want ErrPopulated", err)
	}
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveParentIfEmpty(parent); err != nil {
		t.Fatal(err)
	}
}

// TestHostSuite runs the create/place/kill suite against this machine's own layout.
func TestHostSuite(t *testing.T) {
	h := testHost(t)
	requireCgroup2(t, h)
	var lim Limits
	var v1 []string
	if h.Mode == Hybrid && h.V1["pids"] != "" {
		// A pids limit puts the worker into the v1 pids hierarchy, so membership there is exercised too.
		lim, v1 = Limits{Pids: 1000}, []string{"pids"}
	}
	t.Run("placement", func(t *testing.T) { checkPlacement(t, h, Limits{}, nil) })
	// With limits: on a hybrid host the memory and pids limits put the worker into those v1 hierarchies
	// too; on a pure v2 host they are the v2 controllers of the one tree.
	t.Run("placement-limits", func(t *testing.T) {
		var ctrls []string
		for _, c := range []string{"memory", "pids"} {
			if h.Mode != Unified && h.V1[c] != "" {
				ctrls = append(ctrls, c)
			}
		}
		checkPlacement(t, h, Limits{Memory: 256 << 20, Pids: 1000}, ctrls)
	})
	t.Run("kill-tree", func(t *testing.T) { checkKillTree(t, h, lim) })
	t.Run("kill-tree-no-limits", func(t *testing.T) { checkKillTree(t, h, Limits{}) })
	t.Run("signal", func(t *testing.T) { checkSignal(t, h, lim) })
	t.Run("refusals", func(t *testing.T) { checkRefusals(t, h) })
	_ = v1
}

// TestConcurrentCreateSameParent: launches racing to create the same new parent all succeed (a parent
// made a moment ago by another Create is not mistaken for a foreign one) and clean up.
func TestConcurrentCreateSameParent(t *testing.T) {
	h := testHost(t)
	parent := testParent(t, h)
	lim := Limits{}
	if h.Mode == Hybrid && h.V1["pids"] != "" {
		lim.Pids = 10
	}
	errs := make(chan error, 8)
	groups := make(chan *Group, 8)
	for i := 0; i < 8; i++ {
		go func() {
			g, err := h.Create(parent, "w"+strconv.Itoa(i), lim)
			errs <- err
			groups <- g
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
		if g := <-groups; g != nil {
			if err := g.Delete(); err != nil {
				t.Error(err)
			}
		}
	}
	if err := h.RemoveParentIfEmpty(parent); err != nil {
		t.Fatal(err)
	}
}

// A launch beside a concurrent `hlaunch gc`, which removes the parent whenever it is empty (the next
// launch re-makes it): every Create succeeds, whether the parent goes between its being found and the
// worker's mkdir in it or not (the guest lane's TestRetentionBesideLiveSidecar: "cgroup parent not
// writable: ... no such file or directory"). A bounded adversary loop.
func TestCreateBesideParentRemoval(t *testing.T) {
	h := testHost(t)
	parent := testParent(t, h)
	stopRemover := removeParentInLoop(t, h, parent)
	var fails []error
	for i := 0; i < 2000 && len(fails) < 3; i++ {
		g, err := h.Create(parent, "w"+strconv.Itoa(i), Limits{})
		if err != nil {
			fails = append(fails, err)
			continue
		}
		if err := g.Delete(); err != nil {
			t.Fatal(err)
		}
	}
	removed := stopRemover()
	if len(fails) > 0 {
		t.Fatalf("beside a parent removed %d times: Create failed: %v", removed, fails)
	}
	if removed == 0 {
		t.Fatal("the adversary never removed the parent: the race was not run")
	}
	_ = h.RemoveParentIfEmpty(parent)
}

// The retry's guarantee behind Create's bound: once one attempt has failed because the parent was removed
// under it, the next attempt makes the parent itself, and a parent an attempt makes is not removable before
// its worker is in it (it is marked after the worker's mkdir). So beside one remover in a tight loop, an
// attempt that follows a failed one never fails. A fresh parent marked at once could be removed again
// before its worker's mkdir, and then every retry could fail ("mkdir .../w532: no such file or directory"
// after five attempts).
func TestCreateRetryWinsAgainstRemoval(t *testing.T) {
	h := testHost(t)
	parent := testParent(t, h)
	stopRemover := removeParentInLoop(t, h, parent)
	var retried int
	var fails []error
	for i := 0; i < 3000 && len(fails) < 3; i++ {
		name := "w" + strconv.Itoa(i)
		g, err := h.create(parent, name, Limits{})
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
				t.Fatalf("first attempt: %v", err)
			}
			retried++
			if g, err = h.create(parent, name, Limits{}); err != nil {
				fails = append(fails, err)
				continue
			}
		}
		if err := g.Delete(); err != nil {
			t.Fatal(err)
		}
	}
	removed := stopRemover()
	if len(fails) > 0 {
		t.Fatalf("beside a parent removed %d times, %d attempts after a failed one failed too: %v", removed, len(fails), fails)
	}
	if retried == 0 {
		t.Fatalf("no attempt failed beside %d removals: the race was not run", removed)
	}
	t.Logf("%d removals, %d retries, each won", removed, retried)
}

// removeParentInLoop is the adversary of the parent-removal tests: `hlaunch gc`'s RemoveParentIfEmpty in a
// tight loop, until the returned stop is called (or the test ends, should it fail first); stop returns how
// many passes removed the parent.
func removeParentInLoop(t *testing.T, h *Host, parent string) (stop func() int) {
	quit := make(chan struct{})
	done := make(chan int)
	go func() {
		removed := 0
		for {
			select {
			case <-quit:
				done <- removed
				return
			default:
			}
			if h.RemoveParentIfEmpty(parent) == nil {
				removed++
			}
		}
	}()
	var once sync.Once
	removed := 0
	stop = func() int {
		once.Do(func() {
			close(quit)
			removed = <-done
		})
		return removed
	}
	t.Cleanup(func() { stop() })
	return stop
}
