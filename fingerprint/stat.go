package fingerprint

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// maxStatLen bounds what is read of a stat line: the kernel's is well under 1 KiB (comm is at most 64 bytes).
const maxStatLen = 4096

// procStat is what this package needs of /proc/<pid>/stat.
type procStat struct {
	State byte   // field 3: R, S, D, Z, X, ...
	Start uint64 // field 22: start time, clock ticks since boot
}

// dead reports a process that has exited (zombie or dead) even though its PID still resolves.
func (s procStat) dead() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// ReadStartTime returns field 22 of a /proc/<pid>/stat line: the process's start time in clock ticks since
// boot.
//
// The line is "pid (comm) state ppid ...", and comm is chosen by the process: it may hold spaces, ')' and
// newlines. Fields are therefore counted after the LAST ')' in the line. hermes splits the whole line on
// spaces and takes index 21; for a comm with whitespace that reads another field, so a hermes row for such
// a process never matches here and is refused as recycled (a refusal, never a wrong signal). For every comm
// without whitespace both give the same number, so hermes' stored fingerprints keep working.
func ReadStartTime(r io.Reader) (uint64, error) {
	st, err := readStat(r)
	if err != nil {
		return 0, err
	}
	return st.Start, nil
}

func readStat(r io.Reader) (procStat, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxStatLen+1))
	if err != nil {
		return procStat{}, err
	}
	if len(b) > maxStatLen {
		return procStat{}, fmt.Errorf("%w: stat line longer than %d bytes", ErrMalformed, maxStatLen)
	}
	return parseStat(b)
}

func parseStat(b []byte) (procStat, error) {
	// "pid (": the pid is decimal digits, then exactly one space and the opening parenthesis.
	open := bytes.IndexByte(b, '(')
	if open < 2 || b[open-1] != ' ' {
		return procStat{}, fmt.Errorf("%w: stat line does not start with \"pid (\"", ErrMalformed)
	}
	if _, err := strconv.ParseUint(string(b[:open-1]), 10, 31); err != nil {
		return procStat{}, fmt.Errorf("%w: stat line pid %q", ErrMalformed, b[:open-1])
	}
	closing := bytes.LastIndexByte(b, ')')
	if closing < open {
		return procStat{}, fmt.Errorf("%w: stat line has no closing ')' after comm", ErrMalformed)
	}
	// After the comm: " state ppid pgrp ..." - field 3 is the first, field 22 the twentieth.
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 20 {
		return procStat{}, fmt.Errorf("%w: stat line has %d fields after comm, want at least 20", ErrMalformed, len(fields))
	}
	if len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("%w: stat state %q", ErrMalformed, fields[0])
	}
	start, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%w: stat start time %q", ErrMalformed, fields[19])
	}
	return procStat{State: fields[0][0], Start: start}, nil
}
