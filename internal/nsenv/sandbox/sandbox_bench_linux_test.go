package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkEnter starts the init stub in the sandbox's namespaces, lets it Enter (or not, for the
// baseline) and execve /bin/true. ns/op is the whole start (fork, Go start-up of the stub, namespaces,
// Enter, exec, exit, wait); enter-ns is Enter alone, timed inside the stub. "unscoped" is Enter without
// the Landlock scopes (Spec.Unscoped), to compare their cost. Compare the sub-benchmarks of one run,
// never absolute times across runs.
func BenchmarkEnter(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, mode := range []string{"noenter", "unscoped", "enter"} {
		b.Run(mode, func(b *testing.B) {
			base := b.TempDir()
			root := base + "/root"
			home := root + "/profiles/b"
			for _, d := range []string{home, root + "/profiles/a", base + "/cwd"} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			sb := Spec{Root: root, Home: home, Cwd: base + "/cwd", Hide: []string{base + "/state"}, Unscoped: mode == "unscoped"}
			if err := sb.Validate(); err != nil {
				b.Fatal(err)
			}
			spec, _ := json.Marshal(sb)
			env, _ := json.Marshal([]string{"PATH=/usr/bin:/bin"})
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			stubEnv := []string{envChild + "=" + string(spec), envTargetEnv + "=" + string(env), envBench + "=" + mode}
			var enterNs int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(exe)
				cmd.Env = stubEnv
				cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
				sb.SysProcAttr(cmd.SysProcAttr)
				var out bytes.Buffer
				cmd.Stdout = &out
				if err := cmd.Run(); err != nil {
					b.Fatalf("stub: %v", err)
				}
				n, _ := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
				enterNs += n
			}
			b.ReportMetric(float64(enterNs)/float64(b.N), "enter-ns")
		})
	}
}
