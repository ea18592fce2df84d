package worker

import (
	"errors"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

// TestDecodeSpecSizes: a spec's limits.memory and memory_high take a number of bytes or the string the
// flags take, through the flags' parser; a bad one is a FieldError naming the field, and limits stays
// strict (an unknown key inside it is refused).
func TestDecodeSpecSizes(t *testing.T) {
	for _, tc := range []struct {
		limits string
		want   cgroup.Limits
		err    string // in SpecMessage
	}{
		{`{"memory":"512M"}`, cgroup.Limits{Memory: 512 << 20}, ""},
		{`{"memory":536870912,"pids":7}`, cgroup.Limits{Memory: 512 << 20, Pids: 7}, ""},
		{`{"memory":"max"}`, cgroup.Limits{Memory: cgroup.Unlimited}, ""},
		{`{"memory":-1}`, cgroup.Limits{Memory: cgroup.Unlimited}, ""},
		{`{"memory_high":"1G","cpus":0.5}`, cgroup.Limits{MemoryHigh: 1 << 30, CPUs: 0.5}, ""},
		{`{"memory":"lots"}`, cgroup.Limits{}, `spec field limits.memory "lots": want a size`},
		{`{"memory_high":"1Q"}`, cgroup.Limits{}, `spec field limits.memory_high "1Q": want a size`},
		{`{"memory":1.5}`, cgroup.Limits{}, "spec field limits.memory 1.5: want a size"},
		{`{"memroy":"1G"}`, cgroup.Limits{}, `unknown key "limits.memroy"`},
	} {
		s, err := DecodeSpec([]byte(`{"profile":"b","argv":["x"],"limits":` + tc.limits + `}`))
		if tc.err == "" {
			if err != nil || s.Limits != tc.want || s.Profile != "b" {
				t.Errorf("%s: %+v %v, want %+v", tc.limits, s.Limits, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(SpecMessage(err), tc.err) {
			t.Errorf("%s: %v (%q), want ErrInvalid with %q", tc.limits, err, SpecMessage(err), tc.err)
		}
	}
}
