package worker

import (
	"errors"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

// The built-in defaults: 2048 tasks, weight 100, half of MemTotal rounded down to a MiB; no memory default
// where MemTotal is unknown.
func TestBuiltinLimits(t *testing.T) {
	got := BuiltinLimits(24*1<<30 + 12345)
	want := cgroup.Limits{Pids: 2048, CPUWeight: 100, Memory: 12 << 30}
	if got != want {
		t.Errorf("BuiltinLimits(24 GiB + 12345) = %+v, want %+v", got, want)
	}
	if got.Memory%(1<<20) != 0 {
		t.Errorf("memory default %d is not a whole MiB", got.Memory)
	}
	if got := BuiltinLimits(3<<20 + 1); got.Memory != 1<<20 {
		t.Errorf("BuiltinLimits(3 MiB + 1).Memory = %d, want 1 MiB", got.Memory)
	}
	if got := BuiltinLimits(0); got.Memory != 0 || got.Pids != DefaultPids {
		t.Errorf("BuiltinLimits(0) = %+v, want no memory default and the others", got)
	}
}

// One resolution: the caller's value, else the launcher's default; Unlimited is none, and only what came
// from a default is reported as such.
func TestEffectiveLimits(t *testing.T) {
	builtin := BuiltinLimits(8 << 30)
	tests := []struct {
		name                string
		spec, cfg           cgroup.Limits
		applied, fromDeflts cgroup.Limits
	}{
		{"empty spec: the built-in defaults", cgroup.Limits{}, cgroup.Limits{},
			cgroup.Limits{Pids: 2048, CPUWeight: 100, Memory: 4 << 30}, cgroup.Limits{Pids: 2048, CPUWeight: 100, Memory: 4 << 30}},
		{"the spec's values win", cgroup.Limits{Pids: 64, Memory: 1 << 20, CPUWeight: 5, CPUs: 0.5, MemoryHigh: 1 << 19}, cgroup.Limits{},
			cgroup.Limits{Pids: 64, Memory: 1 << 20, CPUWeight: 5, CPUs: 0.5, MemoryHigh: 1 << 19}, cgroup.Limits{}},
		{"-1 in the spec is no limit", cgroup.Limits{Pids: -1, Memory: -1, CPUWeight: -1}, cgroup.Limits{},
			cgroup.Limits{}, cgroup.Limits{}},
		{"a launcher's default", cgroup.Limits{}, cgroup.Limits{Pids: 64},
			cgroup.Limits{Pids: 64, CPUWeight: 100, Memory: 4 << 30}, cgroup.Limits{Pids: 64, CPUWeight: 100, Memory: 4 << 30}},
		{"a launcher without defaults", cgroup.Limits{Pids: 10}, cgroup.Limits{Pids: -1, Memory: -1, CPUWeight: -1},
			cgroup.Limits{Pids: 10}, cgroup.Limits{}},
		{"one field unlimited, the rest default", cgroup.Limits{Pids: -1}, cgroup.Limits{},
			cgroup.Limits{CPUWeight: 100, Memory: 4 << 30}, cgroup.Limits{CPUWeight: 100, Memory: 4 << 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, fromDefaults := EffectiveLimits(tt.spec, LauncherDefaults(tt.cfg, builtin))
			if applied != tt.applied || fromDefaults != tt.fromDeflts {
				t.Errorf("EffectiveLimits(%+v, cfg %+v) = %+v, %+v; want %+v, %+v", tt.spec, tt.cfg, applied, fromDefaults, tt.applied, tt.fromDeflts)
			}
			if OnlyAsked(applied, fromDefaults) != must(EffectiveLimits(tt.spec, cgroup.Limits{})) {
				t.Errorf("onlyAsked(%+v, %+v) is not the spec's own limits", applied, fromDefaults)
			}
		})
	}
}

func must(l, _ cgroup.Limits) cgroup.Limits { return l }

// FitDefaults leaves out the defaults of a controller the host refuses, one controller at a time, and
// never a limit the caller asked for.
func TestFitDefaults(t *testing.T) {
	missing := map[string]bool{"cpu": true, "memory": true}
	try := func(tries *[]cgroup.Limits) func(cgroup.Limits) error {
		return func(l cgroup.Limits) error {
			*tries = append(*tries, l)
			for c, need := range map[string]bool{"cpu": l.CPUWeight != 0 || l.CPUs != 0, "memory": l.Memory != 0 || l.MemoryHigh != 0, "pids": l.Pids != 0} {
				if need && missing[c] {
					return &cgroup.ControllerError{Controller: c, Err: cgroup.ErrUnsupportedLimit}
				}
			}
			return nil
		}
	}
	var tries []cgroup.Limits
	all := cgroup.Limits{Pids: 2048, CPUWeight: 100, Memory: 1 << 30}
	if err := FitDefaults(all, all, try(&tries)); err != nil {
		t.Fatalf("only defaults: %v", err)
	}
	if last := tries[len(tries)-1]; last != (cgroup.Limits{Pids: 2048}) || len(tries) != 3 {
		t.Errorf("tries %+v: want the pids default kept, cpu and memory left out, in 3 tries", tries)
	}

	tries = nil
	asked := cgroup.Limits{Pids: 2048, CPUWeight: 100, Memory: 1 << 30}
	err := FitDefaults(asked, cgroup.Limits{Pids: 2048, CPUWeight: 100}, try(&tries))
	if !errors.Is(err, cgroup.ErrUnsupportedLimit) {
		t.Fatalf("an asked-for memory limit without the controller: %v, want ErrUnsupportedLimit", err)
	}
	for _, l := range tries {
		if l.Memory == 0 {
			t.Errorf("tried %+v: the caller's memory limit was left out", l)
		}
	}

	tries = nil
	if err := FitDefaults(cgroup.Limits{}, cgroup.Limits{}, try(&tries)); err != nil || len(tries) != 1 {
		t.Errorf("no limits: %v after %d tries", err, len(tries))
	}
}

func TestParseMemTotal(t *testing.T) {
	good := "MemFree:         1000 kB\nMemTotal:       24576000 kB\nBuffers: 1 kB\n"
	if n, err := ParseMemTotal(strings.NewReader(good)); err != nil || n != 24576000<<10 {
		t.Errorf("ParseMemTotal = %d, %v; want %d", n, err, int64(24576000)<<10)
	}
	for _, bad := range []string{"", "MemFree: 1 kB\n", "MemTotal: 12 MB\n", "MemTotal: -5 kB\n", "MemTotal: x kB\n", "MemTotal:\n", "MemTotal: 0 kB\n"} {
		if n, err := ParseMemTotal(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMemTotal(%q) = %d, want an error", bad, n)
		}
	}
}

func FuzzParseMemTotal(f *testing.F) {
	f.Add("MemTotal:       24576000 kB\n")
	f.Add("MemTotal: 9999999999999999999 kB\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseMemTotal(strings.NewReader(s)); err == nil && n <= 0 {
			t.Errorf("ParseMemTotal(%q) = %d without an error", s, n)
		}
	})
}
