package fingerprint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The recycled-PID test re-executes this test binary as PID 1 of a fresh PID namespace (unshare --pid
// --fork --mount-proc). These variables carry its orders in and the path of its JSON report out.
const (
	envRecycle       = "HLAUNCH_FP_RECYCLE_HELPER"
	envRecycleRoot   = "HLAUNCH_FP_CGROUP_ROOT"
	envRecycleWorker = "HLAUNCH_FP_WORKER_CGROUP"
	envRecycleOther  = "HLAUNCH_FP_STRANGER_CGROUP"
	envRecycleResult = "HLAUNCH_FP_RESULT"

	recyclePID = 4000 // the PID the worker and then the stranger are forced to get
)

func TestMain(m *testing.M) {
	if os.Getenv(envRecycle) == "1" {
		os.Exit(recycleHelper())
	}
	if os.Getenv(envBigExit) == "1" {
		os.Exit(bigExit())
	}
	os.Exit(m.Run())
}

// recycleReport is what the helper saw inside the namespace.
type recycleReport struct {
	LeaderPID, StrangerPID     int
	LeaderStart, StrangerStart uint64
	Initial                    Verdict // worker alive: running
	Populated                  Verdict // leader dead, stranger at its PID, a worker process still in the cgroup
	PopulatedAuthorize         string  // the refusal error
	PopulatedRefused           bool
	SameTick                   Verdict // as Populated, had the stranger started in the leader's clock tick
	HermesVerdict              Verdict // the same PID through its hermes fingerprint
	HermesRefused              bool
	Empty                      Verdict // the worker's cgroup empty, stranger still at the PID
	EmptyRefused               bool
	StrangerAlive              bool // after every check: never signalled
	Error                      string
}

func TestKernelRecycledPID(t *testing.T) {
	tr := newTree(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("skipping: unshare(1) (util-linux) is not installed")
	}
	w := tr.mkdir("w")
	s := tr.mkdir("s")
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(ctxT(t, 60*time.Second), unshare, "--pid", "--fork", "--mount", "--mount-proc", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRecycle+"=1", envRecycleRoot+"="+tr.mount, envRecycleWorker+"="+w,
		envRecycleOther+"="+s, envRecycleResult+"="+out)
	combined, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper in a new PID namespace: %v\n%s", err, combined)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no report from the helper: %v\n%s", err, combined)
	}
	var r recycleReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("helper report: %s", b)
	if r.Error != "" {
		t.Fatalf("helper: %s", r.Error)
	}
	if r.LeaderPID != recyclePID || r.StrangerPID != recyclePID {
		t.Fatalf("PID was not recycled: leader %d, stranger %d", r.LeaderPID, r.StrangerPID)
	}
	if r.Initial.State != Running {
		t.Fatalf("live worker: %v, want running", r.Initial)
	}
	if r.Populated.State != Recycled || !r.PopulatedRefused {
		t.Fatalf("stranger at the leader's PID, worker cgroup populated: %v (refused %v), want recycled and refused", r.Populated, r.PopulatedRefused)
	}
	if r.SameTick.State != Recycled {
		t.Fatalf("stranger with the leader's start tick: %v, want recycled (not a member)", r.SameTick)
	}
	if r.LeaderStart != r.StrangerStart && (r.HermesVerdict.State != Recycled || !r.HermesRefused) {
		t.Fatalf("hermes row for the recycled PID: %v (refused %v), want recycled", r.HermesVerdict, r.HermesRefused)
	}
	// The worker has ended and a stranger holds its PID: recycled, never exited-and-forgotten.
	if r.Empty.State != Recycled || !r.EmptyRefused {
		t.Fatalf("worker cgroup empty, stranger at its PID: %v (refused %v), want recycled and refused", r.Empty, r.EmptyRefused)
	}
	if !r.StrangerAlive {
		t.Fatal("the stranger at the recycled PID did not survive")
	}
}

// recycleHelper runs as PID 1 of a fresh PID namespace: it forces a worker to PID N, records it, lets it
// die, forces an unrelated process to PID N outside the worker's cgroup, and reports every verdict.
func recycleHelper() int {
	var r recycleReport
	if err := recycleSteps(&r); err != nil {
		r.Error = err.Error()
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(os.Getenv(envRecycleResult), b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0 // leaving PID 1 kills whatever is left in this namespace
}

func recycleSteps(r *recycleReport) error {
	root := os.Getenv(envRecycleRoot)
	w, s := os.Getenv(envRecycleWorker), os.Getenv(envRecycleOther)
	src := Sources{CgroupRoot: root}
	if os.Getpid() != 1 {
		return fmt.Errorf("helper is PID %d, not 1 of a new PID namespace", os.Getpid())
	}

	leader, err := startAtPID(recyclePID, filepath.Join(root, w), "sleep", "1000")
	if err != nil {
		return err
	}
	r.LeaderPID = leader.Process.Pid
	// A second worker process keeps the cgroup populated after the leader dies.
	companion, err := startAtPID(0, filepath.Join(root, w), "sleep", "1000")
	if err != nil {
		return err
	}
	id := CaptureChild(src, recyclePID, w)
	if id.Unverified {
		return fmt.Errorf("capture: %s", id.Reason)
	}
	r.LeaderStart = id.Start
	if r.Initial, err = Verify(src, id); err != nil {
		return err
	}

	_ = leader.Process.Kill() // our own unreaped child: its PID cannot have been reused
	_ = leader.Wait()
	time.Sleep(30 * time.Millisecond) // let the clock tick so the stranger's start time differs too

	stranger, err := startAtPID(recyclePID, filepath.Join(root, s), "sleep", "1000")
	if err != nil {
		return err
	}
	r.StrangerPID = stranger.Process.Pid
	f, err := os.Open("/proc/" + strconv.Itoa(recyclePID) + "/stat")
	if err != nil {
		return err
	}
	r.StrangerStart, err = ReadStartTime(f)
	f.Close()
	if err != nil {
		return err
	}

	if r.Populated, err = Verify(src, id); err != nil {
		return err
	}
	h, _, err := Authorize(src, id)
	r.PopulatedRefused = h == nil && errors.Is(err, ErrRefused)
	if err != nil {
		r.PopulatedAuthorize = err.Error()
	}
	// Two processes can start in one clock tick; then only cgroup membership tells them apart.
	sameTick := id
	sameTick.Start = r.StrangerStart
	if r.SameTick, err = Verify(src, sameTick); err != nil {
		return err
	}
	if r.HermesVerdict, err = VerifyHermes(src, recyclePID, id.Fingerprint()); err != nil {
		return err
	}
	hh, _, err := AuthorizeHermes(src, recyclePID, id.Fingerprint())
	r.HermesRefused = hh == nil && errors.Is(err, ErrRefused)

	_ = companion.Process.Kill()
	_ = companion.Wait()
	if r.Empty, err = Verify(src, id); err != nil {
		return err
	}
	he, _, err := Authorize(src, id)
	r.EmptyRefused = he == nil && errors.Is(err, ErrRefused)

	// The stranger is our child: alive means not reaped, not a zombie, and no signal pending.
	st, err := readStatFile("/proc/" + strconv.Itoa(recyclePID) + "/stat")
	r.StrangerAlive = err == nil && !st.Dead() && st.Start == r.StrangerStart && stranger.ProcessState == nil
	_ = stranger.Process.Kill()
	_ = stranger.Wait()
	return nil
}

// startAtPID starts argv in the cgroup at cgroupDir; when pid > 0 it forces that PID through ns_last_pid,
// retrying when another thread of this process took the number first.
func startAtPID(pid int, cgroupDir string, argv ...string) (*exec.Cmd, error) {
	dir, err := os.Open(cgroupDir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	for attempt := 0; attempt < 50; attempt++ {
		if pid > 0 {
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
				return nil, err
			}
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if pid <= 0 || cmd.Process.Pid == pid {
			return cmd, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	return nil, fmt.Errorf("could not start a process at PID %d", pid)
}
