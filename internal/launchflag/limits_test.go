package launchflag

import (
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

func TestParseCount(t *testing.T) {
	for v, want := range map[string]int64{"0": 0, "64": 64, "2048": 2048, "max": cgroup.Unlimited, "MAX": cgroup.Unlimited} {
		if got, err := ParseCount("--pids", v); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for v, say := range map[string]string{"-1": "--pids -1: must not be negative", "-64": "must not be negative",
		"many": `--pids "many": want a whole number`, "": "want a whole number", "+5": "want a whole number", "1.5": "or max"} {
		if got, err := ParseCount("--pids", v); err == nil || !strings.Contains(err.Error(), say) {
			t.Errorf("ParseCount(%q) = %d, %v; want an error saying %q", v, got, err, say)
		}
	}
}

func TestParseSize(t *testing.T) {
	for v, want := range map[string]int64{"512M": 512 << 20, "2G": 2 << 30, "1048576": 1 << 20, "max": cgroup.Unlimited, "0": 0} {
		if got, err := ParseSize("--memory", v); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"-1", "-5M", "lots", "", "512X"} {
		if got, err := ParseSize("--memory", v); err == nil || !strings.Contains(err.Error(), "--memory") {
			t.Errorf("ParseSize(%q) = %d, %v; want an error naming --memory", v, got, err)
		}
	}
}

// The sidecar's default flags: absent is the built-in default (0), max and 0 are no default (Unlimited).
func TestDefaultLimits(t *testing.T) {
	tests := []struct {
		in   DefaultLimits
		want cgroup.Limits
	}{
		{DefaultLimits{}, cgroup.Limits{}},
		{DefaultLimits{Pids: "64"}, cgroup.Limits{Pids: 64}},
		{DefaultLimits{Pids: "max", Memory: "0", CPUWeight: "max"}, cgroup.Limits{Pids: -1, Memory: -1, CPUWeight: -1}},
		{DefaultLimits{Pids: "0", Memory: "2G", CPUWeight: "500"}, cgroup.Limits{Pids: -1, Memory: 2 << 30, CPUWeight: 500}},
	}
	for _, tt := range tests {
		got, err := tt.in.Limits()
		if err != nil || got != tt.want {
			t.Errorf("%+v.Limits() = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for in, say := range map[DefaultLimits]string{
		{Pids: "-3"}:         "--default-pids -3",
		{Pids: "8"}:          "--default-pids 8",
		{Memory: "lots"}:     "--default-memory",
		{CPUWeight: "20000"}: "--default-cpu-weight 20000",
		{CPUWeight: "x"}:     "--default-cpu-weight",
	} {
		if _, err := in.Limits(); err == nil || !strings.Contains(err.Error(), say) {
			t.Errorf("%+v.Limits(): %v; want an error saying %q", in, err, say)
		}
	}
}
