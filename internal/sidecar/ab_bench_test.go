package sidecar_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// abOutEnv names the JSON file BenchmarkSidecarAB writes its figures to (scripts/bench-ab.sh reads it).
const abOutEnv = "HLAUNCH_BENCH_AB"

// abFigures is what BenchmarkSidecarAB measures, per side ("base", "head").
type abFigures struct {
	Rounds  int                  `json:"rounds"`
	Spawns  int                  `json:"spawns_per_round"`
	Clients int                  `json:"clients"`
	Workers int                  `json:"workers"`
	StateFS string               `json:"state_fs"`
	Load    map[string]*abLoad   `json:"load"`
	Memory  map[string]*abMemory `json:"memory"`
	// SandboxMemory is Memory for sandboxed workers (their init stub is a second hlaunch process).
	SandboxMemory map[string]*abMemory `json:"sandbox_memory"`
}

// abLoad is one side's closed-loop spawns, pooled over its rounds.
type abLoad struct {
	Spawns        int       `json:"spawns"`
	P50MS         float64   `json:"p50_ms"`
	P99MS         float64   `json:"p99_ms"`
	SpawnsPerS    float64   `json:"spawns_per_s"`
	RoundPerS     []float64 `json:"round_spawns_per_s"`
	CPUmsPerSpawn float64   `json:"cpu_ms_per_spawn"`
}

// abMemory is one side's idle detached workers: the summed Pss of the hlaunch processes that serve them
// (the shim, and a sandbox's init stub) and of the workers themselves, and the sidecar's own growth.
type abMemory struct {
	Workers          int `json:"workers"`
	HlaunchPssKiB    int `json:"hlaunch_pss_kib"`
	HlaunchProcs     int `json:"hlaunch_procs"`
	WorkerPssKiB     int `json:"worker_pss_kib"`
	SidecarGrowthKiB int `json:"sidecar_rss_growth_kib"`
}

// BenchmarkSidecarAB is `make bench-ab`'s sidecar half: a real `hlaunch sidecar --scope cgroup` of the base
// build ($HLAUNCH_BIN_BASE) and of the head ($HLAUNCH_BIN), alternated in rounds (base first in odd rounds,
// head first in even ones) so that the machine's load falls on both alike. Each round starts a fresh
// sidecar per side with a fresh state directory under $HLAUNCH_BENCH_STATE_BASE (a tmpfs) and runs
// HLAUNCH_AB_SPAWNS spawns of /bin/true from benchClients clients in a closed loop. Then, per side, the
// memory of HLAUNCH_AB_WORKERS idle detached workers (`sleep`), unsandboxed and sandboxed: the summed
// Pss of every hlaunch process that serves them against the workers' own. It writes $HLAUNCH_BENCH_AB and
// skips unless that is set; it needs root. Everything lives under cgroup parents named from
// $HLAUNCH_BENCH_PARENT, killed and removed after each phase and at the end.
func BenchmarkSidecarAB(b *testing.B) {
	out := os.Getenv(abOutEnv)
	if out == "" {
		b.Skip("scripts/bench-ab.sh sets " + abOutEnv + "; not a Go benchmark")
	}
	bins := map[string]string{"base": os.Getenv("HLAUNCH_BIN_BASE"), "head": os.Getenv("HLAUNCH_BIN")}
	if bins["base"] == "" || bins["head"] == "" || os.Geteuid() != 0 {
		b.Skip("needs root, HLAUNCH_BIN and HLAUNCH_BIN_BASE (two built hlaunch binaries)")
	}
	parent := os.Getenv("HLAUNCH_BENCH_PARENT")
	if parent == "" {
		parent = fmt.Sprintf("hlaunch-bench-ab-%08x", rand.Uint32())
	}
	fig := abFigures{Rounds: envInt("HLAUNCH_AB_ROUNDS", 3), Spawns: envInt("HLAUNCH_AB_SPAWNS", 300),
		Clients: benchClients, Workers: envInt("HLAUNCH_AB_WORKERS", 200),
		Load: map[string]*abLoad{}, Memory: map[string]*abMemory{}, SandboxMemory: map[string]*abMemory{}}
	dir := b.TempDir()
	stateBase := dir
	if base := os.Getenv("HLAUNCH_BENCH_STATE_BASE"); base != "" {
		var err error
		if stateBase, err = os.MkdirTemp(base, "hlaunch-bench-ab-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(stateBase) })
	}
	fig.StateFS = fsType(stateBase)
	root := filepath.Join(dir, "hermes")
	if err := os.MkdirAll(filepath.Join(root, "profiles", "b", "cache", "scratch"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "profiles", "b", ".env"), []byte("B_MARKER=b\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	// The profile home belongs to a hermes user (nobody here), as in production: a root sidecar's worker
	// runs as that owner, and a sandboxed one needs it.
	if err := filepath.WalkDir(filepath.Join(root, "profiles", "b"), func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// The sockets live apart from the hermes root: a sandbox covers the sidecar's socket directory, and
	// refuses a profile home under a covered path.
	sockDir, err := os.MkdirTemp("", "hlab-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(sockDir) })
	n := 0
	fresh := func(side string) (state, sock, cg string) {
		n++
		cg = fmt.Sprintf("%s-%d", parent, n)
		b.Cleanup(func() { removeParent(b, cg) })
		return filepath.Join(stateBase, fmt.Sprintf("%s%d", side, n)), filepath.Join(sockDir, fmt.Sprintf("%d.sock", n)), cg
	}

	lat := map[string][]time.Duration{}
	wall := map[string]time.Duration{}
	cpu := map[string]float64{}
	spec := []byte(`{"profile":"b","argv":["/bin/true"]}`)
	for r := 0; r < fig.Rounds; r++ {
		order := []string{"base", "head"}
		if r%2 == 1 {
			order = []string{"head", "base"}
		}
		for _, side := range order {
			state, sock, cg := fresh(side)
			sc := startSidecar(b, bins[side], root, state, sock, cg, 0)
			spawnMany(b, sc, spec, benchClients, 2*benchClients) // warm the connections and the page cache
			cpu0 := treeCPU(sc.cmd.Process.Pid)
			l, w := spawnMany(b, sc, spec, benchClients, fig.Spawns)
			time.Sleep(300 * time.Millisecond) // let the last shims be reaped, so their CPU is counted
			cpu[side] += treeCPU(sc.cmd.Process.Pid) - cpu0
			sc.stop(b)
			lat[side] = append(lat[side], l...)
			wall[side] += w
			if fig.Load[side] == nil {
				fig.Load[side] = &abLoad{}
			}
			fig.Load[side].RoundPerS = append(fig.Load[side].RoundPerS, float64(len(l))/w.Seconds())
			removeParent(b, cg)
			b.Logf("round %d %s: %.0f spawns/s", r+1, side, float64(len(l))/w.Seconds())
		}
	}
	for side, l := range lat {
		p := fig.Load[side]
		p.Spawns, p.P50MS, p.P99MS = len(l), pctMS(l, 0.50), pctMS(l, 0.99)
		p.SpawnsPerS = float64(len(l)) / wall[side].Seconds()
		p.CPUmsPerSpawn = cpu[side] / float64(len(l))
	}

	for i, sandbox := range []bool{false, true} {
		order := []string{"base", "head"}
		if i%2 == 1 {
			order = []string{"head", "base"}
		}
		for _, side := range order {
			state, sock, cg := fresh(side)
			m := idleMemory(b, bins[side], root, state, sock, cg, fig.Workers, sandbox)
			removeParent(b, cg)
			if sandbox {
				fig.SandboxMemory[side] = m
			} else {
				fig.Memory[side] = m
			}
			b.Logf("memory %s sandbox=%v: %+v", side, sandbox, *m)
		}
	}
	raw, err := json.MarshalIndent(fig, "", " ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		b.Fatal(err)
	}
}

// idleMemory starts a sidecar, spawns workers detached `sleep`s through it from benchClients clients, and
// sums the Pss of the processes under each worker's shim once every worker runs: comm "sleep" are the
// workers, the rest (the shim, a sandbox's init stub) is what hlaunch adds. The sidecar is stopped after;
// the caller removes the workers with their cgroup parent.
func idleMemory(b *testing.B, bin, root, state, sock, cg string, workers int, sandbox bool) *abMemory {
	b.Helper()
	sc := startSidecar(b, bin, root, state, sock, cg, 0)
	defer sc.stop(b)
	idle := rssKiB(sc.cmd.Process.Pid, "VmRSS")
	spec := []byte(`{"profile":"b","argv":["sleep","3600"]}`)
	if sandbox {
		spec = []byte(`{"profile":"b","argv":["sleep","3600"],"sandbox":true}`)
	}
	shims := make(chan int, workers)
	spawnManyWith(b, sc, spec, benchClients, workers, func(rc map[string]any) {
		if p, ok := rc["shim_pid"].(float64); ok {
			shims <- int(p)
		}
	})
	close(shims)
	m := &abMemory{Workers: workers}
	for shim := range shims {
		tree := descendants(shim)
		// The receipt is sent once the target runs; its exec of sleep may still be on its way.
		for deadline := time.Now().Add(5 * time.Second); !hasComm(tree, "sleep") && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			tree = descendants(shim)
		}
		for _, p := range tree {
			if comm(p) == "sleep" {
				m.WorkerPssKiB += smapsKiB(p, "Pss:")
			} else {
				m.HlaunchPssKiB += smapsKiB(p, "Pss:")
				m.HlaunchProcs++
			}
		}
	}
	m.SidecarGrowthKiB = rssKiB(sc.cmd.Process.Pid, "VmRSS") - idle
	return m
}

// descendants is pid and every process below it, from /proc/<pid>/task/<tid>/children.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			raw, _ := os.ReadFile(t)
			for _, f := range strings.Fields(string(raw)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func hasComm(pids []int, name string) bool {
	for _, p := range pids {
		if comm(p) == name {
			return true
		}
	}
	return false
}

func comm(pid int) string {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(raw))
}

// envInt is the positive integer in the environment variable name, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
