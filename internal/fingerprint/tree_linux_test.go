package fingerprint

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// doubleForkTree starts a leader whose grandchildren escape its process group and session (setsid, then
// the intermediate shell exits), the escape a process-group kill misses.
func doubleForkTree(tr *testTree, rel string) (*proc, []int) {
	p := tr.start(rel, "sh", "-c", `setsid sh -c 'sleep 1000 & sleep 1000 &' ; exec sleep 1000`)
	var pids []int
	// Wait until the intermediate shells are gone: three sleeps remain.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids = tr.waitProcs(rel, 3)
		sleeps := 0
		for _, pid := range pids {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(b)) == "sleep" {
				sleeps++
			}
		}
		if sleeps == 3 && len(pids) == 3 {
			return p, pids
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("tree did not settle: %v", pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func requireGone(t *testing.T, pids []int, leader int) {
	t.Helper()
	for _, pid := range pids {
		if pid == leader {
			continue
		}
		// Orphans are reaped by their new parent; allow a moment, and accept a reused PID only if it is not
		// a sleep of ours (it would not be in our cgroup, which is verified empty).
		deadline := time.Now().Add(5 * time.Second)
		for {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil || strings.Contains(string(b), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d survived: %s", pid, b)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestKernelSignalAllKillsSetsidTree(t *testing.T) {
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		sweep bool // force the freeze-signal-thaw path even for SIGKILL
	}{
		{"SIGKILL via cgroup.kill", syscall.SIGKILL, false},
		{"SIGKILL via freeze sweep", syscall.SIGKILL, true},
		{"SIGTERM via freeze sweep", syscall.SIGTERM, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			w := tr.mkdir("w")
			p, pids := doubleForkTree(tr, w)
			src := tr.src()
			id := mustCapture(t, src, p.pid, w)
			h, _, err := Authorize(src, id)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx := ctxT(t, 10*time.Second)
			if c.sweep {
				err = h.tree([]int{0}).Signal(ctx, c.sig) // a Skip (of no process) rules cgroup.kill out
			} else {
				err = h.SignalAll(ctx, c.sig)
			}
			if err != nil {
				t.Fatalf("SignalAll: %v", err)
			}
			if err := h.WaitEmpty(ctx); err != nil {
				t.Fatalf("WaitEmpty: %v", err)
			}
			p.requireKilledBy(t, c.sig)
			requireGone(t, pids, p.pid)
			if pop, err := h.Populated(); err != nil || pop {
				t.Fatalf("Populated = %v, %v", pop, err)
			}
			if b, err := os.ReadFile(tr.path(w) + "/cgroup.freeze"); err != nil || strings.TrimSpace(string(b)) != "0" {
				t.Fatalf("cgroup left frozen: %q, %v", b, err)
			}
			requireVerdict(t, src, id, Exited)
		})
	}
}

func TestKernelLeaderDeadTreeLives(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p := tr.start(w, "sh", "-c", "sleep 1000 & exec sleep 1000")
	tr.waitProcs(w, 2)
	src := tr.src()
	id := mustCapture(t, src, p.pid, w)
	h, _, err := Authorize(src, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SignalLeader(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.requireKilledBy(t, syscall.SIGKILL)
	h.Close()

	v := requireVerdict(t, src, id, Running)
	if !strings.Contains(v.Reason, "leader") || !strings.Contains(v.Reason, "still runs") {
		t.Fatalf("reason %q does not say the tree lives", v.Reason)
	}
	h, _, err = Authorize(src, id)
	if err != nil || h.LeaderPinned() {
		t.Fatalf("Authorize = %v, %v", h, err)
	}
	defer h.Close()
	if err := h.SignalLeader(syscall.SIGTERM); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("SignalLeader with dead leader = %v, want ErrNotRunning", err)
	}
	if err := h.SignalAll(ctxT(t, 10*time.Second), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitEmpty(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	requireVerdict(t, src, id, Exited)
}

// A sandbox's init forwards what it receives to the target; the whole-worker signal must reach every
// other member directly and leave the init out, or the target gets it twice.
func TestKernelSignalAllButLeader(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p, pids := doubleForkTree(tr, w)
	src := tr.src()
	id := mustCapture(t, src, p.pid, w)
	h, _, err := Authorize(src, id)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := ctxT(t, 10*time.Second)
	if err := h.SignalAllButLeader(ctx, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pids, p.pid) // every member but the leader ended by the SIGTERM
	p.requireAlive(t)           // the leader (a sleep: SIGTERM would end it) heard nothing
	if b, err := os.ReadFile(tr.path(w) + "/cgroup.freeze"); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("cgroup left frozen: %q, %v", b, err)
	}
	// SIGKILL is never held back from the leader.
	if err := h.SignalAllButLeader(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitEmpty(ctx); err != nil {
		t.Fatal(err)
	}
	p.requireKilledBy(t, syscall.SIGKILL)
}

func TestKernelHermesRows(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	p := tr.start(w, "sleep", "1000")
	src := tr.src()
	id := mustCapture(t, src, p.pid, w)
	fp := id.Fingerprint()
	epoch, start, err := ParseHermesFingerprint(fp)
	if err != nil || epoch != id.Epoch() || start != id.Start {
		t.Fatalf("ParseHermesFingerprint(%q) = %q, %d, %v", fp, epoch, start, err)
	}
	otherBoot := src
	otherBoot.BootID = fixed("00000000-1111-2222-3333-444444444444")
	wrongStart := id.Epoch() + "|" + strconv.FormatUint(id.Start+1, 10)
	for _, c := range []struct {
		name string
		src  Sources
		fp   string
		want State
	}{
		{"matching", src, fp, Running},
		{"other boot", otherBoot, fp, ForeignBoot},
		{"other start", src, wrongStart, Recycled},
		{"unverified", src, "unverified", Unverified},
		{"null", src, "", Unverified},
		{"malformed", src, "garbage|1", Malformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := VerifyHermes(c.src, p.pid, c.fp)
			if err != nil || v.State != c.want {
				t.Fatalf("VerifyHermes = %v, %v; want %s", v, err, c.want)
			}
			if c.want != Running {
				h, v, err := AuthorizeHermes(c.src, p.pid, c.fp)
				if h != nil || v.State != c.want || !errors.Is(err, ErrRefused) {
					t.Fatalf("AuthorizeHermes = %v, %v, %v", h, v, err)
				}
				p.requireAlive(t)
			}
		})
	}
	h, v, err := AuthorizeHermes(src, p.pid, fp)
	if err != nil || v.State != Running {
		t.Fatalf("AuthorizeHermes = %v, %v", v, err)
	}
	defer h.Close()
	if pop, err := h.Populated(); err != nil || !pop {
		t.Fatalf("Populated = %v, %v", pop, err)
	}
	if err := h.SignalAll(ctxT(t, 5*time.Second), syscall.SIGTERM); err != nil { // leader only: no cgroup known
		t.Fatal(err)
	}
	p.requireKilledBy(t, syscall.SIGTERM)
	if err := h.WaitEmpty(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if v, err := VerifyHermes(src, p.pid, fp); err != nil || v.State != Exited {
		t.Fatalf("VerifyHermes after exit = %v, %v", v, err)
	}
}

// A cgroup removed after it was opened (systemd collects an empty scope at any moment) reads as empty: a
// stop that verifies a worker just as its scope goes must not fail on the vanished cgroup.procs.
func TestKernelRemovedCgroupReadsEmpty(t *testing.T) {
	tr := newTree(t)
	w := tr.mkdir("w")
	dir, err := unix.Open(tr.path(w), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	if err := os.Remove(tr.path(w)); err != nil {
		t.Fatal(err)
	}
	if pids, err := walkProcs(dir); err != nil || len(pids) != 0 {
		t.Fatalf("walkProcs of a removed cgroup = %v, %v; want none, nil", pids, err)
	}
	if pop, err := populated(dir); err != nil || pop {
		t.Fatalf("populated of a removed cgroup = %v, %v; want false, nil", pop, err)
	}
}
