package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/launcher"
)

// soakSnapshot is what the soak samples of a sidecar and what it keeps: at the start and at the end of the
// soak, and for the soaked and the fresh sidecar over the interleaved rounds.
type soakSnapshot struct {
	RSSKiB      int     `json:"rss_kib"`
	FDs         int     `json:"fds"`
	Threads     int     `json:"threads"`
	StateBytes  int64   `json:"state_bytes"`
	LedgerBytes int64   `json:"ledger_bytes"`
	Records     int     `json:"records"`
	Ledger      int     `json:"ledger_records"`
	Cgroups     int     `json:"cgroups"`
	ListMS      float64 `json:"list_ms"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	PerSec      float64 `json:"spawns_per_s"`
}

// soakReport is the soak's result, written to $HLAUNCH_SOAK_REPORT for make bench (docs/benchmarks.md). Counts
// compare End with Start (the soaked sidecar with itself); time figures compare Soaked with Fresh, measured
// side by side in one run, so that the machine's load cancels out.
type soakReport struct {
	Spawns, Clients int
	Rate            float64 // spawns/s offered between the windows; 0: closed loop throughout
	Keep            int     // --keep: ended workers' records kept
	LedgerKeep      int     // --ledger-keep: the ledger's bound
	Start, End      soakSnapshot
	// Rounds of RoundSpawns spawns each, alternating the soaked sidecar and a fresh one (empty state, same
	// flags, its own cgroup parent), after the end window: Soaked and Fresh are their time figures.
	Rounds, RoundSpawns int
	Soaked, Fresh       soakSnapshot
	LeftRunning         int
	Missing             int // spawns whose ended ledger record the test never saw
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func pctMS(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration{}, d...)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))]) / 1e6
}

// soakTmpfsState moves e's state directory to a tmpfs, as production has it (the root sidecar's /run/hlaunch):
// a directory under /dev/shm, removed after, so that other processes' fsyncs on the disk make no latency noise.
func soakTmpfsState(t *testing.T, e *env) {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &fs); err != nil || fs.Type != 0x01021994 { // TMPFS_MAGIC
		t.Fatalf("the soak's state directory goes on a tmpfs: /dev/shm is not one (statfs: %v, type %#x)", err, fs.Type)
	}
	dir, err := os.MkdirTemp("/dev/shm", "hlaunch-soak-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	old := e.State
	e.State = filepath.Join(dir, "state")
	for i, v := range e.Launcher {
		if v == "HLAUNCH_STATE_DIR="+old {
			e.Launcher[i] = "HLAUNCH_STATE_DIR=" + e.State
		}
	}
}

// ledgerWatch reads a bounded ledger while the soak runs: every id whose record it has seen ended, before
// the bound prunes it, so that "no record lost" holds with the ledger the defaults give.
type ledgerWatch struct {
	dir   string
	mu    sync.Mutex
	ended map[string]bool
	last  map[string]string // the last read of a record not yet seen ended (for the failure message)
	stop  chan struct{}
	done  chan struct{}
}

func watchLedger(t *testing.T, dir string) *ledgerWatch {
	w := &ledgerWatch{dir: dir, ended: map[string]bool{}, last: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			w.pass()
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

// pass reads each record not yet seen ended once.
func (w *ledgerWatch) pass() {
	ents, _ := os.ReadDir(w.dir)
	for _, de := range ents {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || !strings.HasPrefix(id, "w-") {
			continue
		}
		w.mu.Lock()
		seen := w.ended[id]
		w.mu.Unlock()
		if seen {
			continue
		}
		b, err := os.ReadFile(filepath.Join(w.dir, de.Name()))
		var rec struct {
			EndedAt string `json:"ended_at"`
		}
		w.mu.Lock()
		if err == nil && json.Unmarshal(b, &rec) == nil && rec.EndedAt != "" {
			w.ended[id] = true
			delete(w.last, id)
		} else if err == nil {
			w.last[id] = time.Now().Format("15:04:05.000") + " " + string(b)
		}
		w.mu.Unlock()
	}
}

func (w *ledgerWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// soakSide is one sidecar the soak drives: its latencies and the ids of its spawns, by spawn index.
type soakSide struct {
	e      *env
	p      *scProc
	pid    int
	ledger *ledgerWatch
	lat    []time.Duration
	ids    []string
	next   int
	mu     sync.Mutex
	lists  []float64 // list latencies (ms) of the interleaved rounds
}

// The soak, short in make test: HLAUNCH_SOAK_SPAWNS spawns (default 2,000) through one
// sidecar from 4 clients, with a gateway's mix (short /bin/true, some whose children outlive the leader,
// some past their deadline), its state on a tmpfs and its ledger bounded. It asserts counts, never
// durations: nothing left running or placed at the end, the records and the ledger within their bounds,
// descriptors and RSS within bounds, every spawn seen ended in the ledger. make bench runs it with 100,000
// spawns, the bulk at a steady HLAUNCH_SOAK_RATE between closed-loop windows at the start and the end,
// then rounds alternating the soaked sidecar and a fresh one, and renders $HLAUNCH_SOAK_REPORT.
func TestSoak(t *testing.T) {
	requireRoot(t)
	v2 := requireCgroup2(t)
	n := 2000
	if s := os.Getenv("HLAUNCH_SOAK_SPAWNS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 400 {
			t.Fatalf("HLAUNCH_SOAK_SPAWNS=%q: want a number >= 400", s)
		}
	}
	// The bulk between the two measured windows runs at a steady rate when HLAUNCH_SOAK_RATE (spawns/s)
	// is set, as a gateway's load arrives; the windows are closed-loop phases, the same at start and end.
	rate := 0.0
	if s := os.Getenv("HLAUNCH_SOAK_RATE"); s != "" {
		var err error
		if rate, err = strconv.ParseFloat(s, 64); err != nil || rate < 0 {
			t.Fatalf("HLAUNCH_SOAK_RATE=%q: want spawns per second", s)
		}
	}
	const clients, keep = 4, 200
	window := max(n/10, 200)
	// The ledger's bound is reached within the first window (so that its size is level from the start on),
	// and never more than the default's.
	ledgerKeep := min(launcher.DefaultRetention().LedgerKeep, window/2)
	rounds, perRound := 10, 200
	if n < 10000 {
		rounds, perRound = 4, 50
	}
	specs := []string{
		scSpec("b", "true"),
		`{"profile":"b","argv":["sh","-c","sleep 1 & exit 0"]}`,
		`{"profile":"b","argv":["sleep","5"],"timeout":"300ms","grace":"200ms"}`,
	}
	newSide := func(total int) *soakSide {
		e := newEnv(t)
		soakTmpfsState(t, e)
		p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"), "--keep", strconv.Itoa(keep),
			"--max-age", "0", "--ledger-keep", strconv.Itoa(ledgerKeep), "--gc-interval", "1s")
		return &soakSide{e: e, p: p, pid: p.cmd.Process.Pid, ledger: watchLedger(t, filepath.Join(e.State, "ledger")),
			lat: make([]time.Duration, total), ids: make([]string, total)}
	}
	snap := func(sd *soakSide, from, to int, took time.Duration) soakSnapshot {
		t0 := time.Now()
		sd.p.list()
		s := soakSnapshot{ListMS: float64(time.Since(t0)) / 1e6, RSSKiB: procStatus(sd.pid, "VmRSS"),
			Threads:    procStatus(sd.pid, "Threads"),
			StateBytes: dirBytes(sd.e.State), LedgerBytes: dirBytes(filepath.Join(sd.e.State, "ledger")),
			Records: countFiles(t, filepath.Join(sd.e.State, "workers"), "w-", ".json"),
			Ledger:  countFiles(t, filepath.Join(sd.e.State, "ledger"), "w-", ".json")}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", sd.pid))
		s.FDs = len(fds)
		ents, _ := os.ReadDir(filepath.Join(v2, sd.e.Parent))
		s.Cgroups = countDirs(ents)
		s.P50MS, s.P99MS = pctMS(sd.lat[from:to], 0.5), pctMS(sd.lat[from:to], 0.99)
		s.PerSec = float64(to-from) / took.Seconds()
		return s
	}
	// run spawns sd's indices up to until from the clients, closed loop or paced; the mix is by the index
	// within this call, so that two calls of the same length spawn the same mix.
	run := func(sd *soakSide, until int, paced float64) time.Duration {
		t0 := time.Now()
		from := sd.next
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var tick *time.Ticker
				if paced > 0 {
					tick = time.NewTicker(time.Duration(float64(clients) / paced * float64(time.Second)))
					defer tick.Stop()
				}
				for {
					if tick != nil {
						<-tick.C
					}
					sd.mu.Lock()
					i := sd.next
					if i >= until {
						sd.mu.Unlock()
						return
					}
					sd.next++
					sd.mu.Unlock()
					spec := specs[0]
					switch k := i - from; {
					case k%20 == 7:
						spec = specs[2]
					case k%10 == 3:
						spec = specs[1]
					}
					t0 := time.Now()
					st, b := sd.p.do("POST", "/v1/workers", spec)
					sd.lat[i] = time.Since(t0)
					var rc receipt
					if st != 201 || json.Unmarshal(b, &rc) != nil {
						t.Errorf("spawn %d: %d %s", i, st, b)
						return
					}
					sd.ids[i] = rc.ID
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	// idleFDs is the count of the sidecar's descriptors once none of its workers runs: what it holds per
	// running worker comes and goes with the spawns, so only counts at rest show a leak.
	idleFDs := func(sd *soakSide) int {
		for deadline := time.Now().Add(60 * time.Second); len(scCgroupsWithProcs(t, v2, sd.e.Parent)) > 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("workers of the first %d spawns still running after 60 s", window)
			}
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", sd.pid))
		return len(fds)
	}
	soaked := newSide(n + rounds*perRound)
	start := snap(soaked, 0, window, run(soaked, window, 0))
	startIdleFDs := idleFDs(soaked)
	run(soaked, n-window, rate)
	end := snap(soaked, n-window, n, run(soaked, n, 0))
	if t.Failed() {
		return
	}
	// Side by side: a fresh sidecar, warmed up with one round that is not counted, then rounds alternating
	// the two with the same mix, so that both see the same load of the machine.
	fresh := newSide((rounds + 1) * perRound)
	run(fresh, perRound, 0)
	var took [2]time.Duration
	for r := 0; r < rounds; r++ {
		for k, sd := range []*soakSide{soaked, fresh} {
			took[k] += run(sd, sd.next+perRound, 0)
			t0 := time.Now()
			sd.p.list()
			sd.lists = append(sd.lists, float64(time.Since(t0))/1e6)
		}
	}
	if t.Failed() {
		return
	}
	rep := soakReport{Spawns: n, Clients: clients, Rate: rate, Keep: keep, LedgerKeep: ledgerKeep, Start: start,
		End: end, Rounds: rounds, RoundSpawns: perRound}
	for k, sd := range []*soakSide{soaked, fresh} {
		s := snap(sd, len(sd.lat)-rounds*perRound, len(sd.lat), took[k])
		sort.Float64s(sd.lists)
		s.ListMS = sd.lists[len(sd.lists)/2]
		if k == 0 {
			rep.Soaked = s
		} else {
			rep.Fresh = s
		}
	}
	// Let the last workers end (the longest lives 1 s past its leader, or its deadline plus grace) and a
	// collection run, then nothing may be left, and the records and the ledger are within their bounds.
	deadline := time.Now().Add(60 * time.Second)
	for _, sd := range []*soakSide{soaked, fresh} {
		for {
			cg := scCgroupsWithProcs(t, v2, sd.e.Parent)
			recs := countFiles(t, filepath.Join(sd.e.State, "workers"), "w-", ".json")
			led := countFiles(t, filepath.Join(sd.e.State, "ledger"), "w-", ".json")
			if len(cg) == 0 && recs <= keep && led <= ledgerKeep {
				break
			}
			if time.Now().After(deadline) {
				rep.LeftRunning += len(cg)
				t.Errorf("60 s after the last spawn: cgroups with processes %v, %d records (keep %d), %d in the ledger (keep %d)",
					cg, recs, keep, led, ledgerKeep)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The end's counts are what the soaked sidecar keeps once its last spawns have ended.
	rep.End.Records = countFiles(t, filepath.Join(soaked.e.State, "workers"), "w-", ".json")
	rep.End.Ledger = countFiles(t, filepath.Join(soaked.e.State, "ledger"), "w-", ".json")
	rep.End.StateBytes = dirBytes(soaked.e.State)
	rep.End.LedgerBytes = dirBytes(filepath.Join(soaked.e.State, "ledger"))
	ents, _ := os.ReadDir(filepath.Join(v2, soaked.e.Parent))
	rep.End.Cgroups = countDirs(ents)
	for _, sd := range []*soakSide{soaked, fresh} {
		sd.ledger.close()
		sd.ledger.pass()
		for _, id := range sd.ids {
			if !sd.ledger.ended[id] {
				if rep.Missing++; rep.Missing <= 3 {
					_, werr := os.Stat(filepath.Join(sd.e.State, "workers", id+".json"))
					t.Logf("no ended ledger record seen for %q (its worker record: %v; last read %q)", id, werr, sd.ledger.last[id])
				}
			}
		}
	}
	if out := os.Getenv("HLAUNCH_SOAK_REPORT"); out != "" {
		b, _ := json.MarshalIndent(rep, "", " ")
		must(t, os.WriteFile(out, b, 0o644))
	}
	t.Logf("soak: %+v", rep)
	if rep.Missing > 0 {
		t.Errorf("%d of %d spawns were never seen ended in the ledger", rep.Missing, len(soaked.ids)+len(fresh.ids))
	}
	// Counts, not durations: what the sidecar holds does not grow with the number of spawns.
	if fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", soaked.pid)); len(fds) > startIdleFDs+8 {
		t.Errorf("sidecar descriptors with no worker running: %d after the first %d spawns, %d at the end", startIdleFDs, window, len(fds))
	}
	if end.RSSKiB > start.RSSKiB*3/2+8192 {
		t.Errorf("sidecar RSS %d KiB at the start, %d KiB at the end", start.RSSKiB, end.RSSKiB)
	}
	if rep.End.Threads > start.Threads+8 {
		t.Errorf("sidecar threads %d at the start, %d at the end", start.Threads, rep.End.Threads)
	}
	// The shims remove their cgroups: at most the exit leaf and a few being removed remain.
	if rep.End.Cgroups > 4 {
		t.Errorf("%d cgroups left under the parent after %d spawns", rep.End.Cgroups, n)
	}
}
