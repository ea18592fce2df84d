package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/systemd/systemdtest"
)

// benchOutEnv names the JSON file BenchmarkSidecarLoad writes its figures to (scripts/bench.sh reads it).
const benchOutEnv = "HLAUNCH_BENCH_SIDECAR"

// sidecarFigures is what BenchmarkSidecarLoad measures; scripts/bench_report.py renders it.
type sidecarFigures struct {
	Method         string         `json:"method"`
	Latency        []latencyPoint `json:"latency"`
	IdleRSSKiB     int            `json:"idle_rss_kib"`
	TrackedWorkers int            `json:"tracked_workers"`
	RSSKiB         int            `json:"rss_kib"`
	ShimPSSKiB     int            `json:"shim_pss_kib"`
	ShimRSSKiB     int            `json:"shim_rss_kib"`
	ReadoptMS      float64        `json:"readopt_ms"`
	ReadoptRecords int            `json:"readopt_records"`
	Notes          []string       `json:"notes"`
	StateFS        string         `json:"state_fs"`
	// Systemd is the spawn latency of a `--scope systemd` sidecar against a real user manager (the
	// systemdtest harness), one client; ADR 0006 compares it with systemd-run --user --scope.
	Systemd *clientPoint `json:"systemd,omitempty"`
	// WarmLatency and SystemdWarm are the same measurements with `--warm 4` (warm slots: shims started and
	// scopes made before the spawns that take them).
	WarmLatency []latencyPoint `json:"warm_latency,omitempty"`
	SystemdWarm *clientPoint   `json:"systemd_warm,omitempty"`
	// Paced and WarmPaced: one client, 100 spawns, benchGap between an answer and the next request.
	Paced     *clientPoint `json:"paced,omitempty"`
	WarmPaced *clientPoint `json:"warm_paced,omitempty"`
	// Rate and WarmRate: open loop, benchClients clients sending benchRate spawns per second between them
	// on a fixed schedule (the load ADR 0006 measures the p99 at).
	Rate     *latencyPoint `json:"rate,omitempty"`
	WarmRate *latencyPoint `json:"warm_rate,omitempty"`
}

// The open-loop phase: benchClients clients offering benchRate spawns per second in all, benchRateSpawns
// spawns (three seconds).
const (
	benchClients    = 10
	benchRate       = 300
	benchRateSpawns = 900
)

// benchWarm is the --warm of the warm-slot phases.
const benchWarm = 4

// clientPoint is one client's spawns: back to back (P50MS, P99MS) and/or benchGap apart (Paced*); a phase
// that measured only one of the two leaves the other zero, which bench_report.py reads as not measured.
type clientPoint struct {
	Spawns int     `json:"spawns"`
	P50MS  float64 `json:"p50_ms,omitempty"`
	P99MS  float64 `json:"p99_ms,omitempty"`
	// Paced: the same count with benchGap between an answer and the next request.
	PacedP50MS float64 `json:"paced_p50_ms"`
	PacedP99MS float64 `json:"paced_p99_ms"`
}

// benchGap is the pause between spawns of the paced phases.
const benchGap = 20 * time.Millisecond

type latencyPoint struct {
	Clients    int     `json:"clients"`
	Spawns     int     `json:"spawns"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	MaxMS      float64 `json:"max_ms"`
	SpawnsPerS float64 `json:"spawns_per_s"`
	// OfferedPerS is the open-loop phase's schedule (spawns per second); zero in closed-loop phases.
	OfferedPerS float64 `json:"offered_per_s,omitempty"`
	// CPUmsPerSpawn is the CPU time (user+system) of the sidecar and its reaped descendants (the shims and
	// the targets) per spawn; BusyPct is how busy the whole machine's CPUs were during the phase.
	CPUmsPerSpawn float64 `json:"cpu_ms_per_spawn"`
	BusyPct       float64 `json:"busy_pct"`
}

// BenchmarkSidecarLoad drives a real `hlaunch sidecar` process ($HLAUNCH_BIN) over its socket, as the
// gateway would, and writes the figures docs/benchmarks.md reports to $HLAUNCH_BENCH_SIDECAR:
// spawn-to-running latency (POST /v1/workers answers once the target runs) at 1, 10 and 50 concurrent
// clients and the spawn rate, the same at 300 spawns/s offered by 10 clients on a fixed schedule (open
// loop), the sidecar's memory with 1,000 tracked workers, one shim's memory (the per-worker cost of the
// exit-status mechanism, ADR 0005), and the re-adoption time of 1,000 records after SIGKILL and restart.
// It is scripts/bench.sh's load generator, not a Go benchmark: it skips unless the variable is set, needs
// root (cgroup placement), and runs once (-benchtime 1x). Everything lives under a cgroup parent of its
// own (HLAUNCH_BENCH_PARENT, else hlaunch-bench-sc-<random>), killed and removed at the end.
func BenchmarkSidecarLoad(b *testing.B) {
	out := os.Getenv(benchOutEnv)
	if out == "" {
		b.Skip("scripts/bench.sh sets " + benchOutEnv + "; not a Go benchmark")
	}
	bin := os.Getenv("HLAUNCH_BIN")
	if bin == "" || os.Geteuid() != 0 {
		b.Skip("needs root and HLAUNCH_BIN (a built hlaunch)")
	}
	parent := os.Getenv("HLAUNCH_BENCH_PARENT")
	if parent == "" {
		parent = fmt.Sprintf("hlaunch-bench-sc-%08x", rand.Uint32())
	}
	b.Cleanup(func() { removeParent(b, parent) })
	dir := b.TempDir()
	// State directories live under HLAUNCH_BENCH_STATE_BASE when set (scripts/bench.sh: /dev/shm, a tmpfs,
	// as /run is on systemd hosts), else in the temporary directory (this machine's ext4).
	stateBase := dir
	if base := os.Getenv("HLAUNCH_BENCH_STATE_BASE"); base != "" {
		var err error
		if stateBase, err = os.MkdirTemp(base, "hlaunch-bench-state-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(stateBase) })
	}
	root := filepath.Join(dir, "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles", "b", "cache", "scratch"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "profiles", "b", ".env"), []byte("B_MARKER=b\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	fig := sidecarFigures{Method: "A real `hlaunch sidecar --scope cgroup` process, driven over its Unix socket " +
		"by Go HTTP clients (one keep-alive connection each). Latency is POST /v1/workers of " +
		"`{\"profile\":\"b\",\"argv\":[\"/bin/true\"]}` to its 201 answer, which the sidecar sends once the target " +
		"runs under its shim (spawn-to-running); spawns/s is spawns over the wall time of the phase. Memory: " +
		"VmRSS of the sidecar, Pss/Rss (smaps_rollup) of shims, averaged over 20. CPU per spawn is the user+system " +
		"time of the sidecar and its reaped descendants (shims, targets) over the phase; busy is the share of " +
		"the machine's CPUs in use meanwhile (this engineer's run and everyone else's)."}

	// Phase 1: latency and throughput, a fresh state directory; then again with warm slots (1 and 10
	// clients), a fresh state directory too.
	sc := startSidecar(b, bin, root, filepath.Join(stateBase, "state1"), filepath.Join(dir, "s1.sock"), parent, 0)
	fig.IdleRSSKiB = rssKiB(sc.cmd.Process.Pid, "VmRSS")
	fig.Latency = latencyPhase(b, sc, []struct{ clients, spawns int }{{1, 200}, {10, 600}, {50, 1000}})
	fig.Paced = pacedPoint(b, sc)
	fig.Rate = ratePoint(b, sc)
	sc.stop(b)
	sc = startSidecar(b, bin, root, filepath.Join(stateBase, "state1w"), filepath.Join(dir, "s1w.sock"), parent, benchWarm)
	time.Sleep(200 * time.Millisecond) // the pool's first fill
	fig.WarmLatency = latencyPhase(b, sc, []struct{ clients, spawns int }{{1, 200}, {10, 600}})
	fig.WarmPaced = pacedPoint(b, sc)
	fig.WarmRate = ratePoint(b, sc)
	sc.stop(b)

	// Phase 2: 1,000 running workers tracked, then SIGKILL and re-adoption.
	const tracked = 1000
	state2, sock2 := filepath.Join(stateBase, "state2"), filepath.Join(dir, "s2.sock")
	sc = startSidecar(b, bin, root, state2, sock2, parent, 0)
	var mu sync.Mutex
	var shims []int
	sleepSpec := []byte(`{"profile":"b","argv":["sleep","3600"]}`)
	_, _ = spawnManyWith(b, sc, sleepSpec, 10, tracked, func(rc map[string]any) {
		if p, ok := rc["shim_pid"].(float64); ok {
			mu.Lock()
			shims = append(shims, int(p))
			mu.Unlock()
		}
	})
	time.Sleep(500 * time.Millisecond) // let the watcher settle on the new records
	fig.TrackedWorkers = tracked
	fig.RSSKiB = rssKiB(sc.cmd.Process.Pid, "VmRSS")
	var pss, rss, n int
	for _, p := range shims[:min(20, len(shims))] {
		if v := smapsKiB(p, "Pss:"); v > 0 {
			pss += v
			rss += smapsKiB(p, "Rss:")
			n++
		}
	}
	if n > 0 {
		fig.ShimPSSKiB, fig.ShimRSSKiB = pss/n, rss/n
	}
	_ = sc.cmd.Process.Signal(syscall.SIGKILL)
	_ = sc.cmd.Wait()
	t0 := time.Now()
	sc = startSidecar(b, bin, root, state2, sock2, parent, 0)
	for {
		running := sc.countRunning(b)
		if running >= tracked {
			fig.ReadoptMS = float64(time.Since(t0).Microseconds()) / 1000
			fig.ReadoptRecords = running
			break
		}
		if time.Since(t0) > 2*time.Minute {
			fig.Notes = append(fig.Notes, fmt.Sprintf("re-adoption: only %d of %d running after 2 min", running, tracked))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fig.Notes = append(fig.Notes, "Re-adoption time runs from the restarted sidecar's exec to the first "+
		"GET /v1/workers listing all 1,000 as running (it includes the sidecar's start-up and that one list).")
	sc.stop(b)
	fig.StateFS = fsType(stateBase)
	// Phase 3, once (with the tmpfs state): a --scope systemd sidecar inside a private user manager.
	if os.Getenv("HLAUNCH_BENCH_STATE_BASE") != "" {
		fig.Systemd = systemdPhase(b, bin, root, filepath.Join(stateBase, "state3"), 0)
		b.Logf("systemd: %+v", *fig.Systemd)
		fig.SystemdWarm = systemdPhase(b, bin, root, filepath.Join(stateBase, "state3w"), benchWarm)
		b.Logf("systemd, --warm %d: %+v", benchWarm, *fig.SystemdWarm)
	}
	raw, err := json.MarshalIndent(fig, "", " ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		b.Fatal(err)
	}
}

// pacedPoint is one client's 100 spawns of /bin/true, benchGap apart.
func pacedPoint(b *testing.B, sc *sidecarProc) *clientPoint {
	lat := spawnPaced(b, sc, []byte(`{"profile":"b","argv":["/bin/true"]}`), 100, benchGap)
	p := &clientPoint{Spawns: len(lat), PacedP50MS: pctMS(lat, 0.50), PacedP99MS: pctMS(lat, 0.99)}
	b.Logf("paced: %+v", *p)
	return p
}

// ratePoint is the open-loop phase: benchClients clients, each with its own connection, send spawns of
// /bin/true on a fixed schedule that adds up to benchRate per second; client c sends its i-th spawn at
// (i*benchClients + c)/benchRate seconds. A spawn's latency runs from its scheduled time, not from when a
// client that fell behind got to send it, so a slow answer counts against every spawn it delayed (no
// coordinated omission).
func ratePoint(b *testing.B, sc *sidecarProc) *latencyPoint {
	b.Helper()
	spec := []byte(`{"profile":"b","argv":["/bin/true"]}`)
	cpu0 := treeCPU(sc.cmd.Process.Pid)
	busy0, all0 := machineCPU()
	per := benchRateSpawns / benchClients
	lat := make([]time.Duration, 0, benchRateSpawns)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, benchClients)
	t0 := time.Now().Add(10 * time.Millisecond)
	for c := 0; c < benchClients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				at := t0.Add(time.Duration(float64(i*benchClients+c) / benchRate * float64(time.Second)))
				time.Sleep(time.Until(at))
				if _, err := sc.spawn(spec); err != nil {
					errs <- err
					return
				}
				d := time.Since(at)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the last shims be reaped, so their CPU is counted
	busy1, all1 := machineCPU()
	cpu := treeCPU(sc.cmd.Process.Pid) - cpu0
	p := &latencyPoint{Clients: benchClients, Spawns: len(lat), P50MS: pctMS(lat, 0.50), P99MS: pctMS(lat, 0.99),
		MaxMS: pctMS(lat, 1), SpawnsPerS: float64(len(lat)) / wall.Seconds(), OfferedPerS: benchRate,
		CPUmsPerSpawn: cpu / float64(len(lat)), BusyPct: 100 * (busy1 - busy0) / max(all1-all0, 1)}
	b.Logf("open loop, %d/s: %+v", benchRate, *p)
	return p
}

// latencyPhase spawns /bin/true at each concurrency in turn and measures latency, rate and CPU.
func latencyPhase(b *testing.B, sc *sidecarProc, phases []struct{ clients, spawns int }) []latencyPoint {
	var out []latencyPoint
	spec := []byte(`{"profile":"b","argv":["/bin/true"]}`)
	for _, c := range phases {
		cpu0 := treeCPU(sc.cmd.Process.Pid)
		busy0, all0 := machineCPU()
		lat, wall := spawnMany(b, sc, spec, c.clients, c.spawns)
		time.Sleep(300 * time.Millisecond) // let the last shims be reaped, so their CPU is counted
		busy1, all1 := machineCPU()
		cpu := treeCPU(sc.cmd.Process.Pid) - cpu0
		out = append(out, latencyPoint{Clients: c.clients, Spawns: len(lat),
			P50MS: pctMS(lat, 0.50), P99MS: pctMS(lat, 0.99), MaxMS: pctMS(lat, 1),
			SpawnsPerS: float64(len(lat)) / wall.Seconds(), CPUmsPerSpawn: cpu / float64(len(lat)),
			BusyPct: 100 * (busy1 - busy0) / max(all1-all0, 1)})
		b.Logf("%d clients: %+v", c.clients, out[len(out)-1])
	}
	return out
}

type sidecarProc struct {
	cmd    *exec.Cmd
	client *http.Client
}

func startSidecar(b *testing.B, bin, root, state, sock, parent string, warm int) *sidecarProc {
	b.Helper()
	cmd := exec.Command(bin, "--root", root, "--state-dir", state, "sidecar", "--socket", sock,
		"--scope", "cgroup", "--cgroup-parent", parent, "--warm", strconv.Itoa(warm))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConns: 128, MaxIdleConnsPerHost: 128,
	}
	sc := &sidecarProc{cmd: cmd, client: &http.Client{Transport: tr, Timeout: 3 * time.Minute}}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	sc.waitHealthy(b)
	return sc
}

// systemdPhase measures one client's spawns through a `--scope systemd --user` sidecar that runs in a
// private systemd user manager's world (systemdtest, the recipe in docs/testing.md), 100 spawns of /bin/true.
func systemdPhase(b *testing.B, bin, root, state string, warm int) *clientPoint {
	m := systemdtest.Start(b)
	sockDir, err := os.MkdirTemp("/tmp", "hlsc-") // a socket path must stay short
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := m.Command(ctx, bin, "--root", root, "--state-dir", state, "sidecar", "--socket", sock,
		"--scope", "systemd", "--user", "--require-scope", "--warm", strconv.Itoa(warm))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	sc := &sidecarProc{cmd: cmd, client: &http.Client{Transport: tr, Timeout: time.Minute}}
	sc.waitHealthy(b)
	if warm > 0 {
		time.Sleep(200 * time.Millisecond) // the pool's first fill
	}
	spec := []byte(`{"profile":"b","argv":["/bin/true"]}`)
	lat, _ := spawnMany(b, sc, spec, 1, 100)
	paced := spawnPaced(b, sc, spec, 100, benchGap)
	sc.stop(b)
	return &clientPoint{Spawns: len(lat), P50MS: pctMS(lat, 0.50), P99MS: pctMS(lat, 0.99),
		PacedP50MS: pctMS(paced, 0.50), PacedP99MS: pctMS(paced, 0.99)}
}

// waitHealthy waits until the sidecar answers /v1/health.
func (sc *sidecarProc) waitHealthy(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := sc.client.Get("http://sidecar/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("sidecar did not answer /v1/health: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (sc *sidecarProc) stop(b *testing.B) {
	_ = sc.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = sc.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = sc.cmd.Process.Kill()
		<-done
	}
}

func (sc *sidecarProc) countRunning(b *testing.B) int {
	resp, err := sc.client.Get("http://sidecar/v1/workers?state=running")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var list []map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(raw, &list) != nil {
		var wrapped struct {
			Workers []map[string]any `json:"workers"`
		}
		if json.Unmarshal(raw, &wrapped) != nil {
			return 0
		}
		list = wrapped.Workers
	}
	n := 0
	for _, w := range list {
		if w["state"] == "running" {
			n++
		}
	}
	return n
}

// spawnPaced runs total spawns from one client with gap between an answer and the next request (the cadence
// of a gateway's tool calls rather than a flood), and returns each spawn's latency.
func spawnPaced(b *testing.B, sc *sidecarProc, spec []byte, total int, gap time.Duration) []time.Duration {
	b.Helper()
	var lat []time.Duration
	for i := 0; i < total; i++ {
		time.Sleep(gap)
		l, _ := spawnMany(b, sc, spec, 1, 1)
		lat = append(lat, l...)
	}
	return lat
}

func spawnMany(b *testing.B, sc *sidecarProc, spec []byte, clients, total int) ([]time.Duration, time.Duration) {
	return spawnManyWith(b, sc, spec, clients, total, nil)
}

// spawnManyWith runs total spawns from clients concurrent goroutines and returns each spawn's latency and
// the phase's wall time. A failed spawn fails the benchmark: a figure over failures would flatter.
func spawnManyWith(b *testing.B, sc *sidecarProc, spec []byte, clients, total int, each func(map[string]any)) ([]time.Duration, time.Duration) {
	b.Helper()
	var mu sync.Mutex
	lat := make([]time.Duration, 0, total)
	next := make(chan struct{}, total)
	for i := 0; i < total; i++ {
		next <- struct{}{}
	}
	close(next)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	t0 := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				s := time.Now()
				body, err := sc.spawn(spec)
				if err != nil {
					errs <- err
					return
				}
				d := time.Since(s)
				if each != nil {
					var rc map[string]any
					if json.Unmarshal(body, &rc) == nil {
						each(rc)
					}
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return lat, wall
}

// spawn posts spec to /v1/workers and returns the receipt's bytes; anything but 201 is an error.
func (sc *sidecarProc) spawn(spec []byte) ([]byte, error) {
	resp, err := sc.client.Post("http://sidecar/v1/workers", "application/json", bytes.NewReader(spec))
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("spawn: %d %s", resp.StatusCode, body)
	}
	return body, nil
}

func pctMS(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return float64(s[i].Microseconds()) / 1000
}

// treeCPU is the CPU time in ms of pid and its reaped descendants (utime+stime+cutime+cstime).
func treeCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var t float64
	for _, i := range []int{11, 12, 13, 14} { // fields 14-17 of stat, counted from field 3
		v, _ := strconv.ParseFloat(f[i], 64)
		t += v
	}
	return t * 10 // USER_HZ is 100 on Linux
}

// machineCPU returns the busy and total jiffies of all CPUs (/proc/stat).
func machineCPU() (busy, total float64) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	for i, v := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// fsType names the file system holding path (tmpfs, ext4, ...), from /proc/self/mountinfo.
func fsType(path string) string {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "?"
	}
	best, typ := "", "?"
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		i := slices.Index(f, "-")
		if len(f) < 5 || i < 0 || i+1 >= len(f) {
			continue
		}
		mp := f[4]
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, typ = mp, f[i+1]
		}
	}
	return typ
}

// rssKiB reads a "Key: N kB" line of /proc/pid/status.
func rssKiB(pid int, key string) int { return kibLine(fmt.Sprintf("/proc/%d/status", pid), key+":") }

// smapsKiB reads a line of /proc/pid/smaps_rollup.
func smapsKiB(pid int, key string) int {
	return kibLine(fmt.Sprintf("/proc/%d/smaps_rollup", pid), key)
}

func kibLine(path, key string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, key) {
			f := strings.Fields(l[len(key):])
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
	}
	return 0
}

// removeParent kills everything under the benchmark's own parent cgroup, in every hierarchy, and removes
// it bottom-up. It never touches anything outside that parent.
func removeParent(b *testing.B, parent string) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent)
	if d := "/sys/fs/cgroup/" + parent; dirExists(d) {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
	}
	for i := 0; i < 100; i++ {
		left := 0
		for _, d := range dirs {
			_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
				if err != nil || e.Name() != "cgroup.procs" {
					return nil
				}
				raw, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(raw)) {
					if pid, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
						left++
					}
				}
				return nil
			})
		}
		if left == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(all[i])
		}
		if dirExists(d) {
			b.Errorf("could not remove %s", d)
		}
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
