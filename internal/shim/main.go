package shim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"github.com/hlaunch/hlaunch/internal/cgroup"
	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/handshake"
	hproc "github.com/hlaunch/hlaunch/internal/proc"
	"github.com/hlaunch/hlaunch/internal/records"
	"github.com/hlaunch/hlaunch/internal/selfguard"
	"github.com/hlaunch/hlaunch/internal/state"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// WorkerConfig and WorkerResult are the shim's protocol (internal/shim) with the stub's config and the
// launcher's receipt.
type (
	WorkerConfig = Config[handshake.Config, worker.Receipt]
	WorkerResult = Result[worker.Receipt]
)

// shimPrep is what a shim finds out before its config arrives.
type shimPrep struct {
	host *cgroup.Host // nil without a usable cgroupfs
	src  fingerprint.Sources
}

func prepareShim() shimPrep {
	host, _ := cgroup.Detect()
	src := fingerprint.Sources{}
	if host != nil {
		src.CgroupRoot = host.Unified
	}
	_ = json.Unmarshal([]byte(`{"init":{},"receipt":{}}`), &WorkerConfig{})
	_, _ = json.Marshal(WorkerResult{Receipt: &worker.Receipt{}})
	_, _ = json.Marshal(records.ExitRecord{})
	_, _ = json.Marshal(worker.Record{})
	return shimPrep{host: host, src: src.Pinned()}
}

// Main is the shim's life: start the worker as its child, report the worker's identity, enforce the
// timeout, wait, and record the exit status. It lives in the worker's cgroup and its own session, so it
// outlives the launcher, the sidecar and the gateway alike. It never returns.
func Main() {
	runtime.GOMAXPROCS(1) // it waits on one child; keep its footprint in the worker's cgroup small
	// Its environ is empty (the launcher starts it so); non-dumpable keeps an unsandboxed worker of the
	// same uid from reading its memory or tracing it.
	if err := selfguard.Hide(); err != nil {
		fmt.Fprintf(os.Stderr, "hlaunch: shim: %v\n", err)
		os.Exit(worker.ExitInternal)
	}
	// A stop sends SIGTERM to every member of the cgroup: the shim must live on to record the exit. The
	// signals are caught and dropped, not ignored: an ignored disposition survives execve, and the worker
	// would inherit a deaf SIGTERM. Catching costs a hand-off to the runtime's signal thread per signal
	// (ADR 0006), so it runs while the config is read, and is complete before the worker is
	// started: a launcher started with SIGHUP or SIGINT ignored (nohup, a shell's background job) gives us
	// those ignored, and a worker forked before the catch would inherit the ignore (a caught signal is
	// reset by execve).
	caught := make(chan struct{})
	go func() {
		drop := make(chan os.Signal, 8)
		signal.Notify(drop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
		close(caught)
		for range drop {
		}
	}()
	// While the launcher places us and sends the config (a warm slot waits here until a spawn takes it), do
	// what does not depend on the config: the cgroup layout, the boot and machine ids, and the JSON codecs'
	// caches for the messages and records, which a cold process builds on first use (ADR 0006).
	prepped := make(chan shimPrep, 1)
	go func() { prepped <- prepareShim() }()
	conn := Open()
	var sc WorkerConfig
	if err := conn.ReadConfig(&sc); err != nil {
		os.Exit(125) // the launcher went away before placing us: start nothing
	}
	<-caught
	proc, release, logs, err := shimStart(&sc)
	if err != nil {
		f := Failure{Stage: "exec", Message: err.Error()}
		var hs *handshake.Error
		var errno syscall.Errno
		if errors.As(err, &hs) {
			f = Failure(hs.Failure)
		} else if errors.As(err, &errno) {
			f.Errno = int(errno)
		}
		_ = conn.Answer(WorkerResult{Failure: &f})
		os.Exit(125)
	}
	pp := <-prepped
	host, src := pp.host, pp.src
	// The worker is our unreaped child: its /proc entry and start time are stable until we Wait.
	ident := fingerprint.CaptureChild(src, proc.Pid, sc.Cgroup)
	if sc.Unit != "" {
		ident = ident.WithUnit(sc.Unit, sc.InvocationID)
	}
	// The record exists before anyone learns of the worker: a launcher that dies now leaves a recorded
	// worker, never an unrecorded one.
	rc := sc.Receipt
	rc.SetIdentity(ident, sc.Unit, sc.InvocationID)
	rc.ShimPID = os.Getpid()
	rc.SetDeadline(sc.Timeout, sc.Grace)
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		rc.ShimStart, _ = fingerprint.ReadStartTime(bytes.NewReader(b))
	}
	workers, err := state.Open(sc.Workers)
	if err == nil {
		err = workers.Write(sc.ID, rc, true)
	}
	stage := "record"
	if err == nil {
		// A worker that ran must have its ledger record: without it the launch fails, like one unrecorded.
		stage, err = "ledger", records.WriteLedger(sc.Ledger, worker.Record{Receipt: *rc, State: fingerprint.Running})
	}
	if err != nil {
		// Unrecorded, the worker could be neither found nor stopped: end it and say why. The launcher
		// discards what was recorded and ends what is left in the worker's cgroup.
		_ = proc.Signal(syscall.SIGKILL)
		_, _ = proc.Wait()
		if logs != nil {
			logs.abort()
		}
		f := Failure{Stage: stage, Message: err.Error()}
		if records.NoSpace(err) {
			f.Errno = int(syscall.ENOSPC)
		}
		_ = conn.Answer(WorkerResult{Failure: &f})
		os.Exit(125)
	}
	_ = conn.Answer(WorkerResult{Receipt: rc})
	if release != nil {
		// Held until the launcher has written the receipt: it closes the config pipe after that (Done).
		conn.WaitDone()
		if err := release(); err != nil {
			// The stub could not exec the target; it exits with 126/127, recorded as the leader's status.
			fmt.Fprintf(os.Stderr, "hlaunch: %v\n", err)
		}
	}

	life := newShimLife(src, ident, proc, rc.Sandbox, records.WorkerLock(sc.Workers, sc.ID))
	// The exit record, while the worker runs: the leader's status once it has ended, and the log's figures
	// as they change. The two are written from two goroutines: each write merges into the one record.
	var mu sync.Mutex
	var running records.ExitRecord
	writeRunning := func(update func(*records.ExitRecord)) {
		mu.Lock()
		defer mu.Unlock()
		update(&running)
		_ = records.UpdateExit(sc.Workers, sc.ID, func(ex *records.ExitRecord) bool {
			if ex.EndedAt != "" {
				return false // stop recorded the end meanwhile; finish merges into it
			}
			*ex = running
			return true
		})
	}
	life.leaderEnded = func(rec records.ExitRecord) {
		writeRunning(func(r *records.ExitRecord) {
			st := r.LogStats()
			*r = rec
			r.SetLog(st)
		})
	}
	if logs != nil {
		life.log = logs
		life.stopPublish = logs.publish(func(st records.LogStats) { writeRunning(func(r *records.ExitRecord) { r.SetLog(st) }) })
	}
	conn.Close()
	group := shimGroup(host, &sc, ident)
	life.Finish(&sc, group, life.supervise(sc.Timeout, sc.Grace))
	os.Exit(0)
}

// shimGroup is the worker's cgroup as its shim holds it for its figures and its removal, or nil. The
// launcher made the cgroup (or had the manager make the scope) and named it in the config; the identity
// the shim captured says the leader is in it and gives its cgroup id. A scope carries no marker of
// hlaunch's, so it is held on that id and the unit's name and InvocationID (cgroup.Host.Hold).
func shimGroup(host *cgroup.Host, sc *WorkerConfig, ident fingerprint.Identity) *cgroup.Group {
	if host == nil || sc.Cgroup == "" {
		return nil
	}
	g, err := host.Hold(cgroup.Claim{Path: sc.Cgroup, ID: ident.CgroupID, Worker: sc.ID, Unit: sc.Unit, InvocationID: sc.InvocationID})
	if err != nil {
		fmt.Fprintf(os.Stderr, "hlaunch shim: %s: no cgroup figures (OOM kills, peak memory) and no removal of the cgroup: %v\n", sc.ID, err)
		return nil
	}
	return g
}

// shimStart starts the worker as the shim's child, in its own session: directly, or through the init stub
// when it enters a sandbox. A worker with the caller's stdio (InheritStdio) is started as the init stub too
// and held on its handshake: release lets it exec once the launcher has written the receipt, so that the
// receipt is on the shared stdout before any output of the worker. release is nil when nothing is held.
// A worker with a log writes into a pipe the shim copies into the log (logs, nil without a log).
func shimStart(sc *WorkerConfig) (proc *hproc.Proc, release func() error, logs *logCopy, err error) {
	var in, out, errf *os.File // nil: /dev/null
	if sc.InheritStdio {
		in, out, errf = os.Stdin, os.Stdout, os.Stderr
	}
	if sc.Log != "" {
		var c *logCopy
		var w *os.File
		if c, w, err = startLogCopy(sc.Log, sc.LogMax, records.LogPosWriter(sc.Workers, sc.ID)); err != nil {
			return nil, nil, nil, err
		}
		defer w.Close() // the worker's: the copy ends when its last writer is gone
		defer func() {
			if err != nil {
				c.abort()
			}
		}()
		out, errf, logs = w, w, c
	}
	proc, release, err = startWorker(sc, []*os.File{in, out, errf})
	return proc, release, logs, err
}

// startWorker is shimStart's start of the worker with files as its stdio.
func startWorker(sc *WorkerConfig, files []*os.File) (proc *hproc.Proc, release func() error, err error) {
	attr := &syscall.SysProcAttr{Setsid: true}
	cfg := sc.Init
	if cfg.Sandbox == nil {
		if sc.Cred != nil {
			// The worker drops, the shim stays root: it must supervise and record.
			attr.Credential = &syscall.Credential{Uid: sc.Cred.UID, Gid: sc.Cred.GID, Groups: []uint32{}}
		}
		path, err := hproc.LookPathAs(cfg.Argv[0], worker.EnvLookup(cfg.Env)("PATH"), attr.Credential)
		if err != nil {
			return nil, nil, err
		}
		if !sc.InheritStdio {
			proc, err := hproc.Spawn(hproc.Command{Path: path, Args: cfg.Argv, Env: cfg.Env, Dir: cfg.Cwd, Files: files, Sys: attr})
			return proc, nil, err
		}
	} else {
		cfg.Sandbox.SysProcAttr(attr)
		if err := selfguard.AllowIDMaps(); err != nil {
			return nil, nil, err
		}
	}
	child, err := handshake.Start(hproc.Command{Path: "/proc/self/exe", Args: []string{"/proc/self/exe", handshake.InitArg}, Env: handshake.RoleEnv(), Files: files, Sys: attr})
	if err != nil {
		return nil, nil, err
	}
	release = func() error { return child.Release(cfg) }
	if sc.InheritStdio {
		return child.Proc, release, nil
	}
	if err := release(); err != nil {
		_, _ = child.Proc.Wait()
		return nil, nil, err
	}
	return child.Proc, nil, nil
}

func fillStatus(rec *records.ExitRecord, ws syscall.WaitStatus) {
	if ws.Signaled() {
		rec.Signal = worker.SignalName(ws.Signal())
		return
	}
	code := ws.ExitStatus()
	rec.ExitCode = &code
}
