package linux

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ProcCgroup is a parsed /proc/<pid>/cgroup: the process's cgroup in each hierarchy, as the reading
// process's cgroup namespace names it.
type ProcCgroup struct {
	// V2 is the path of the "0::/path" line as the kernel wrote it (not cleaned: "/../x" names a cgroup
	// outside the reader's cgroup namespace); "" when there is none (a legacy host).
	V2 string
	// V1 maps each v1 controller ("memory", "cpu", "name=systemd") to its path, from lines like
	// "4:memory:/path" and "3:cpu,cpuacct:/path".
	V1 map[string]string
}

// ParseProcCgroup parses the text of /proc/<pid>/cgroup. A line that is not "id:controllers:path" with an
// absolute path is ErrMalformed, and so is a second cgroup2 line.
func ParseProcCgroup(b []byte) (ProcCgroup, error) {
	pc := ProcCgroup{V1: map[string]string{}}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") {
			return ProcCgroup{}, fmt.Errorf("%w: cgroup line %q", ErrMalformed, line)
		}
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return ProcCgroup{}, fmt.Errorf("%w: cgroup line %q", ErrMalformed, line)
		}
		if id == "0" && ctrls == "" {
			if pc.V2 != "" {
				return ProcCgroup{}, fmt.Errorf("%w: two cgroup2 lines", ErrMalformed)
			}
			pc.V2 = p
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c != "" {
				pc.V1[c] = p
			}
		}
	}
	return pc, nil
}

// KeyedValue returns the value of key in a flat-keyed cgroup file, one "key value" per line
// (cgroup.events, memory.events, cpu.stat, memory.oom_control).
func KeyedValue(b []byte, key string) (string, bool) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		k, v, ok := bytes.Cut(line, []byte(" "))
		if ok && string(k) == key {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}

// KeyedUint is KeyedValue for a numeric value: found reports whether key is there; a value that is not an
// unsigned number is ErrMalformed.
func KeyedUint(b []byte, key string) (v uint64, found bool, err error) {
	s, ok := KeyedValue(b, key)
	if !ok {
		return 0, false, nil
	}
	v, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: %s %q", ErrMalformed, key, s)
	}
	return v, true, nil
}

// Events is a parsed cgroup.events (cgroup v2).
type Events struct {
	Populated bool // the cgroup or a descendant holds a process
	Frozen    bool // cgroup.freeze took effect (false on kernels before 5.2, which have no "frozen" key)
}

// ParseEvents parses the text of cgroup.events. A missing "populated" key, or a value other than 0 or 1,
// is ErrMalformed.
func ParseEvents(b []byte) (Events, error) {
	var ev Events
	var err error
	if ev.Populated, err = eventFlag(b, "populated", true); err == nil {
		ev.Frozen, err = eventFlag(b, "frozen", false)
	}
	return ev, err
}

func eventFlag(b []byte, key string, required bool) (bool, error) {
	v, ok := KeyedValue(b, key)
	switch {
	case !ok && !required:
		return false, nil
	case !ok:
		return false, fmt.Errorf("%w: cgroup.events has no %s key", ErrMalformed, key)
	case v == "0":
		return false, nil
	case v == "1":
		return true, nil
	}
	return false, fmt.Errorf("%w: cgroup.events %s %q", ErrMalformed, key, v)
}

// ParseProcs parses the text of a cgroup.procs (or tasks) file: one PID a line. A PID of 0 (a process
// outside the reader's PID namespace) is left out; anything that is not a number is ErrMalformed.
func ParseProcs(b []byte) ([]int, error) {
	var pids []int
	for _, f := range bytes.Fields(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil || pid < 0 {
			return nil, fmt.Errorf("%w: cgroup.procs pid %q", ErrMalformed, f)
		}
		if pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
