package shim

import (
	"context"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/linux"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// The worker is its whole tree (ADR 0005, docs/identity.md): a detached worker has ended when nothing but
// its shim is left in its cgroup, not when its leader exits. The shim supervises until then: it records
// the leader's exit status when the leader ends and the worker's end when the tree has ended, enforces
// --timeout and --grace on the whole tree, and removes the worker's cgroup itself (a scope, emptied by
// the shim's exit, is collected by its manager).

// treeKillRepeat is how often the kill after the grace is repeated while anything is left: without a
// freezer (the shim is a member, so the cgroup is not frozen) a process forking as fast as the sweep
// could outrun one sweep, never all of them.
const treeKillRepeat = time.Second

// treePollMax bounds the interval at which the shim looks for the rest of the tree once the leader has
// ended: a worker whose children outlive its leader is seen ended within this time.
const treePollMax = time.Second

// Life is one supervised worker: its leader (the shim's child) and, when its identity verified, a
// handle pinned on its cgroup through which every signal goes (fingerprint: pidfds, never bare PIDs).
type Life struct {
	proc    *hproc.Proc
	h       *fingerprint.Handle // nil without a cgroup or a verified identity: the leader is the worker
	sandbox bool                // the leader is a sandbox's init, which forwards signals to the target
	self    int
	// leaderEnded, when not nil, records the leader's status as soon as it is known, before the tree has
	// ended (the exit record without ended_at): a shim killed with its tree (stop's, or signal --all's,
	// whole-cgroup SIGKILL) leaves the leader's status behind.
	leaderEnded func(records.ExitRecord)
	log         *logCopy // the copy of the worker's output into its log; nil without a log
	stopPublish func()   // ends the publication of the log's figures in the running record (log)
}

// supervise waits for the worker's leader and then its whole tree, enforcing timeout and grace on the
// tree, and returns the exit record. It stops every timer before it returns, so a worker that ends just
// before its deadline is never recorded as timed out.
func (s *Life) supervise(timeout, grace time.Duration) records.ExitRecord {
	var rec records.ExitRecord
	leader := make(chan syscall.WaitStatus, 1)
	leaderErr := make(chan error, 1)
	go func() {
		ws, err := s.proc.Wait()
		if err != nil {
			leaderErr <- err
			return
		}
		leader <- ws
	}()
	var term, kill *time.Timer
	var termC, killC <-chan time.Time
	if timeout > 0 {
		term = time.NewTimer(timeout)
		termC = term.C
	}
	defer func() {
		if term != nil {
			term.Stop()
		}
		if kill != nil {
			kill.Stop()
		}
	}()
	treeDone := make(chan struct{})
	leaderEnded := false
	onLeader := func(ws syscall.WaitStatus, ok bool) {
		leaderEnded = true
		if ok {
			fillStatus(&rec, ws)
		}
		rec.LeaderEndedAt = worker.Now()
		if s.leaderEnded != nil {
			s.leaderEnded(rec)
		}
		go s.waitTree(treeDone)
	}
	for {
		select {
		case <-termC:
			termC = nil
			// The leader may have ended in the same instant: take its status first, so that a worker whose
			// tree had ended before the deadline is never recorded as timed out.
			select {
			case ws := <-leader:
				onLeader(ws, true)
			default:
			}
			if !s.liveAtDeadline(leaderEnded) {
				continue
			}
			// The deadline covers the whole tree: every member but the shim (and a sandbox's forwarding init).
			rec.TimedOut = true
			s.signal(syscall.SIGTERM)
			kill = time.NewTimer(grace)
			killC = kill.C
		case <-killC:
			s.signal(syscall.SIGKILL)
			kill.Reset(treeKillRepeat)
		case ws := <-leader:
			onLeader(ws, true)
		case <-leaderErr:
			onLeader(0, false)
		case <-treeDone:
			rec.EndedAt = worker.Now()
			return rec
		}
	}
}

// liveAtDeadline reports whether anything of the worker still runs: the leader, or (with a cgroup) any
// member but the shim.
func (s *Life) liveAtDeadline(leaderEnded bool) bool {
	if !leaderEnded && !childExited(s.proc.Pid) {
		return true
	}
	if s.h == nil {
		return false
	}
	members, err := s.h.Members()
	return err != nil || !alone(members, s.self)
}

// signal sends sig to the whole worker except the shim; SIGTERM leaves a sandbox's init out too.
func (s *Life) signal(sig syscall.Signal) {
	if s.h == nil {
		_ = s.proc.Signal(sig)
		return
	}
	if s.sandbox && sig != syscall.SIGKILL {
		_ = s.h.SignalAllButLeader(context.Background(), sig)
		return
	}
	_ = s.h.SignalAll(context.Background(), sig)
}

// waitTree closes done once the leader's tree has ended: nothing but the shim is left in the cgroup.
func (s *Life) waitTree(done chan<- struct{}) {
	defer close(done)
	if s.h == nil {
		return // the leader was the worker, and it has been reaped
	}
	for i := 0; ; i++ {
		members, err := s.h.Members()
		if err != nil || alone(members, s.self) {
			// An unreadable cgroup is not a live tree we could wait for: record what is known.
			return
		}
		time.Sleep(min(10*time.Millisecond<<min(i, 10), treePollMax))
	}
}

// alone reports whether members holds nothing but self.
func alone(members []int, self int) bool {
	for _, p := range members {
		if p != self {
			return false
		}
	}
	return true
}

// Finish records the worker's end and removes its cgroup. It is the shim's last step: the record is
// written before the cgroup goes, so that nobody sees an ended worker without its record. The ledger's
// end is written first: the worker's exit record then says when the ledger could not take it
// (ledger_error). An exit record that cannot be written either leaves the worker to hlaunch's next reader,
// which records its end as that of a lost shim (orphan.go).
func (s *Life) Finish(sc *WorkerConfig, group *cgroup.Group, rec records.ExitRecord) {
	if group != nil {
		if st, err := group.Stats(); err == nil {
			rec.OOMKilled = st.OOMKills > 0
			rec.MemoryPeak = st.MemoryPeak
		}
	}
	if s.log != nil {
		s.stopPublish() // no running record is written after this: the end record is the last
		rec.SetLog(s.log.stop())
	}
	if err := records.FinishLedger(sc.Ledger, sc.ID, rec); err != nil {
		rec.LedgerError = err.Error()
	}
	// A stop that recorded the end first (it thought this shim killed with the tree) is merged into, not
	// overwritten: this record has the leader's status and the log's figures, that one says it was stopped.
	_ = records.UpdateExit(sc.Workers, sc.ID, func(ex *records.ExitRecord) bool {
		stopped := ex.Stopped
		*ex = rec
		ex.Stopped = ex.Stopped || stopped
		return true
	})
	if s.h != nil {
		s.h.Close()
	}
	// A scope is the manager's to collect once the shim has exited; a raw cgroup is ours to remove.
	if group != nil && sc.Unit == "" && group.Leave(s.self) == nil {
		_ = group.Delete()
	}
}

// newShimLife pins the worker for supervision. The leader is the shim's unreaped child, so the identity
// verifies; when it does not (an unverified capture, no cgroup), the leader alone is supervised.
func newShimLife(src fingerprint.Sources, ident fingerprint.Identity, proc *hproc.Proc, sandbox bool, lock string) *Life {
	s := &Life{proc: proc, sandbox: sandbox, self: os.Getpid()}
	if ident.Unverified || ident.Cgroup == "" {
		return s
	}
	if h, _, err := fingerprint.Authorize(src, ident); err == nil && h != nil {
		h.SetLock(lock)
		s.h = h
	}
	return s
}

// childExited reports whether our child pid has exited (a zombie not yet reaped, or reaped already),
// without reaping it: the Wait goroutine may not have delivered its status yet.
func childExited(pid int) bool {
	var info unix.Siginfo
	err := linux.RetryErr(func() error { return unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) })
	return err != nil || info.Signo != 0 // ECHILD: reaped; a zeroed siginfo: still running
}
