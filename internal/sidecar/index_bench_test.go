package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// BenchmarkIndexedState gives the figures of docs/benchmarks.md's "Indexed state" for the hlaunch binary
// HLAUNCH_BIN and, when HLAUNCH_BIN_BASE names a build of an older commit, for that one too, side by side
// and interleaved in one run: a detached launch of /bin/true (--scope none) with and without --key and
// `hlaunch ps` over 1,000 and 10,000 kept records, and the CPU one sidecar spends while 100 clients wait on
// one running worker (cpu% of one CPU, read from the sidecar's /proc/<pid>/stat over a window).
func BenchmarkIndexedState(b *testing.B) {
	bins := []struct{ name, path string }{{"new", os.Getenv("HLAUNCH_BIN")}}
	if base := os.Getenv("HLAUNCH_BIN_BASE"); base != "" {
		bins = append([]struct{ name, path string }{{"base", base}}, bins...)
	}
	if bins[len(bins)-1].path == "" {
		b.Skip("HLAUNCH_BIN is not set: these figures are of the built binary (make build)")
	}
	root := testutil.HermesRoot(b, map[string]string{"b": "B_MARKER=b\n"})
	for _, n := range []int{1000, 10000} {
		state := keptState(b, n)
		// Each iteration runs every operation of every binary once, in turn, so that the machine's load
		// falls on all of them alike; each is reported as its own mean (ms).
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			sum := map[string]time.Duration{}
			var names []string
			for i := 0; i < b.N; i++ {
				for _, mode := range []string{"unkeyed", "keyed", "ps", "ps-page"} {
					for _, bin := range bins {
						if mode == "ps-page" && bin.name == "base" {
							continue // no --limit before the index
						}
						name := bin.name + "-" + mode + "-ms"
						if i == 0 {
							names = append(names, name)
						}
						sum[name] += cliOp(b, bin.path, root, state, mode)
					}
				}
			}
			for _, name := range names {
				b.ReportMetric(float64(sum[name].Microseconds())/1000/float64(b.N), name)
			}
		})
	}
	for _, bin := range bins {
		b.Run("waiters=100/"+bin.name, func(b *testing.B) { waitersCPU(b, bin.path, root, keptState(b, 1000)) })
	}
}

// keptState is a state directory on a tmpfs where there is one (as /run/hlaunch is) keeping n ended
// workers' records, shaped as listLauncher's in the launcher's benchmarks.
func keptState(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if d, err := os.MkdirTemp("/dev/shm", "hlaunch-bench-"); err == nil {
		b.Cleanup(func() { _ = os.RemoveAll(d) })
		dir = d
	}
	workers := filepath.Join(dir, "workers")
	if err := os.Mkdir(workers, 0o700); err != nil {
		b.Fatal(err)
	}
	self := fingerprint.CaptureChild(fingerprint.Sources{}, os.Getpid(), "")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("w-%012x", i)
		ident := self
		ident.Cgroup, ident.CgroupID = "/hlaunch-bench-gone/"+id, 1
		ident.PID, ident.Start = 1<<22+1, 1 // above any pid_max: never a process
		rc, _ := json.Marshal(worker.Receipt{ID: id, Token: ident.Token(), PID: ident.PID, Mode: worker.ModeCgroup, StartedAt: now, Key: fmt.Sprintf("kept-%d", i%50)})
		ex := fmt.Sprintf(`{"exit_code":0,"ended_at":%q}`, now)
		if os.WriteFile(filepath.Join(workers, id+".json"), rc, 0o600) != nil || os.WriteFile(filepath.Join(workers, id+".exit.json"), []byte(ex), 0o600) != nil {
			b.Fatal("write records")
		}
	}
	return dir
}

// cliOp runs one operation of bin and returns how long it took; a detached launch's worker is then waited
// for, not counted (the key is free again for the next launch).
func cliOp(b *testing.B, bin, root, state, mode string) time.Duration {
	args := []string{"--root", root, "--state-dir", state}
	switch mode {
	case "ps":
		args = append(args, "ps", "--json")
	case "ps-page":
		args = append(args, "ps", "--json", "--limit", "100", "--after", "w-000000000100")
	default:
		args = append(args, "exec", "-p", "b", "--detach", "--scope", "none")
		if mode == "keyed" {
			args = append(args, "--key", "bench-key")
		}
		args = append(args, "--", "/bin/true")
	}
	t0 := time.Now()
	out, err := exec.Command(bin, args...).Output()
	took := time.Since(t0)
	if err != nil {
		b.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	if mode == "keyed" || mode == "unkeyed" {
		var rc worker.Receipt
		if err := json.Unmarshal(out, &rc); err != nil {
			b.Fatal(err)
		}
		if err := exec.Command(bin, "--root", root, "--state-dir", state, "wait", rc.ID).Run(); err != nil {
			b.Fatal(err)
		}
	}
	return took
}

// waitersCPU starts a sidecar of bin over state, a worker that sleeps, and 100 clients waiting on it, and
// reports the sidecar's CPU over a window while they wait.
func waitersCPU(b *testing.B, bin, root, state string) {
	sock := filepath.Join(b.TempDir(), "s.sock")
	cmd := exec.Command(bin, "--root", root, "--state-dir", state, "sidecar", "--socket", sock, "--scope", "none")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}, MaxIdleConnsPerHost: 200}
	client := &http.Client{Transport: tr}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := client.Get("http://sidecar/v1/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(start) > time.Minute {
			b.Fatal("the sidecar did not answer")
		}
	}
	out, err := exec.Command(bin, "--root", root, "--state-dir", state, "exec", "-p", "b", "--detach", "--scope", "none", "--", "sleep", "600").Output()
	if err != nil {
		b.Fatal(err)
	}
	var rc worker.Receipt
	if err := json.Unmarshal(out, &rc); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = exec.Command(bin, "--root", root, "--state-dir", state, "stop", rc.ID).Run() }()
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := client.Get("http://sidecar/v1/workers/" + rc.ID + "/wait?timeout=10m"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(2 * time.Second) // the waiters connect and park; their start is not what is measured
	b.ResetTimer()
	var used, window float64
	for i := 0; i < b.N; i++ {
		c0, t0 := treeCPU(cmd.Process.Pid), time.Now()
		time.Sleep(5 * time.Second)
		used += treeCPU(cmd.Process.Pid) - c0
		window += float64(time.Since(t0).Milliseconds())
	}
	b.StopTimer()
	b.ReportMetric(100*used/window, "cpu%")
	_ = exec.Command(bin, "--root", root, "--state-dir", state, "stop", rc.ID).Run()
	wg.Wait()
}
