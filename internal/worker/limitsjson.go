package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hlaunch/hlaunch/internal/cgroup"
)

// SizeAccepted is what a size setting (--memory, limits.memory) takes, for its error line.
const SizeAccepted = "a size in bytes with an optional K, M, G or T suffix (512M, 2G), or max"

// ParseLimitSize parses the value v of the size setting named flag ("--memory") as cgroup.ParseSize does,
// except that "max" (no limit) is cgroup.Unlimited: the one parser of the --memory flag and of a spec's
// limits.memory written as a string. Its error is the line that names the flag and what it takes.
func ParseLimitSize(flag, v string) (int64, error) {
	if strings.EqualFold(strings.TrimSpace(v), "max") {
		return cgroup.Unlimited, nil
	}
	n, err := cgroup.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want %s", flag, v, SizeAccepted)
	}
	return n, nil
}

// specLimits is a spec's "limits" object as JSON has it: memory and memory_high are a size, either a
// number of bytes or a string as the flags take it ("512M", "max"); the rest are numbers.
type specLimits struct {
	Memory     specSize `json:"memory,omitempty"`
	MemoryHigh specSize `json:"memory_high,omitempty"`
	Pids       int64    `json:"pids,omitempty"`
	CPUWeight  int64    `json:"cpu_weight,omitempty"`
	CPUs       float64  `json:"cpus,omitempty"`
}

func (l *specLimits) limits() cgroup.Limits {
	return cgroup.Limits{Memory: l.Memory.n, MemoryHigh: l.MemoryHigh.n, Pids: l.Pids, CPUWeight: l.CPUWeight, CPUs: l.CPUs}
}

// specSize is one size field of specLimits. Its flag is set before decoding (it names the setting in
// the error); a string is parsed by the flag's own parser, a number must be whole.
type specSize struct {
	flag string
	n    int64
}

// UnmarshalJSON takes a whole number of bytes or a size string; an error is a FieldError naming the flag
// (the sidecar words it with the spec field).
func (s *specSize) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return &FieldError{Msg: fmt.Sprintf("%s: %v", s.flag, err)}
		}
		var n int64
		var err error
		if s.flag == "--memory" {
			n, err = ParseLimitSize(s.flag, v)
		} else {
			n, err = cgroup.ParseSize(v) // memory_high: "max" is none (0), as --memory-high
			if err != nil {
				err = fmt.Errorf("%s %q: want %s", s.flag, v, SizeAccepted)
			}
		}
		if err != nil {
			return &FieldError{Msg: err.Error()}
		}
		s.n = n
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return &FieldError{Msg: fmt.Sprintf("%s %s: want %s (as a string), or a whole number of bytes", s.flag, b, SizeAccepted)}
	}
	s.n = n
	return nil
}
