package linux

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// MaxStatLen bounds what is read of a stat line: the kernel's is well under 1 KiB (comm is at most 64 bytes).
const MaxStatLen = 4096

// Stat is a parsed /proc/<pid>/stat line (proc(5)).
type Stat struct {
	State byte   // field 3: R, S, D, Z, X, ...
	Start uint64 // field 22: start time, clock ticks since boot
	// after holds fields 3 onwards (those after comm), for Field.
	after [][]byte
}

// Dead reports a process that has exited (zombie or dead) even though its PID still resolves.
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// pfExiting is PF_EXITING in field 9 (flags): the kernel sets it as a task begins to exit, before the
// process leaves cgroup.procs (and empties a cgroup it was alone in) and long before it is a zombie (a large
// address space takes milliseconds to tear down in between).
const pfExiting = 0x4

// Exiting reports a process that has begun to exit or has exited: nothing it does from then on is its own.
func (s Stat) Exiting() bool {
	flags, err := s.Field(9)
	return s.Dead() || err == nil && flags&pfExiting != 0
}

// Field returns numeric field n (1-based, as proc(5) numbers them; n >= 4, the fields after comm and state),
// for example 50 and 51, env_start and env_end. ErrMalformed when the line has no such field or it is not
// an unsigned number.
func (s Stat) Field(n int) (uint64, error) {
	i := n - 3
	if n < 4 || i >= len(s.after) {
		return 0, fmt.Errorf("%w: stat line has no field %d", ErrMalformed, n)
	}
	v, err := strconv.ParseUint(string(s.after[i]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: stat field %d %q", ErrMalformed, n, s.after[i])
	}
	return v, nil
}

// ReadStat reads one stat line from r (at most MaxStatLen bytes) and parses it.
func ReadStat(r io.Reader) (Stat, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxStatLen+1))
	if err != nil {
		return Stat{}, err
	}
	if len(b) > MaxStatLen {
		return Stat{}, fmt.Errorf("%w: stat line longer than %d bytes", ErrMalformed, MaxStatLen)
	}
	return ParseStat(b)
}

// ParseStat parses a /proc/<pid>/stat line.
//
// The line is "pid (comm) state ppid ...", and comm is chosen by the process: it may hold spaces, ')' and
// newlines. Fields are therefore counted after the LAST ')' in the line (a process cannot put a ')' after
// its comm's closing one). Malformed text is ErrMalformed.
func ParseStat(b []byte) (Stat, error) {
	b = bytes.Clone(b) // Field reads it later: a caller's reused buffer must not change the answer
	// "pid (": the pid is decimal digits, then exactly one space and the opening parenthesis.
	open := bytes.IndexByte(b, '(')
	if open < 2 || b[open-1] != ' ' {
		return Stat{}, fmt.Errorf("%w: stat line does not start with \"pid (\"", ErrMalformed)
	}
	if _, err := strconv.ParseUint(string(b[:open-1]), 10, 31); err != nil {
		return Stat{}, fmt.Errorf("%w: stat line pid %q", ErrMalformed, b[:open-1])
	}
	closing := bytes.LastIndexByte(b, ')')
	if closing < open {
		return Stat{}, fmt.Errorf("%w: stat line has no closing ')' after comm", ErrMalformed)
	}
	// After the comm: " state ppid pgrp ..." - field 3 is the first, field 22 the twentieth.
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 20 {
		return Stat{}, fmt.Errorf("%w: stat line has %d fields after comm, want at least 20", ErrMalformed, len(fields))
	}
	if len(fields[0]) != 1 {
		return Stat{}, fmt.Errorf("%w: stat state %q", ErrMalformed, fields[0])
	}
	st := Stat{State: fields[0][0], after: fields}
	start, err := st.Field(22)
	if err != nil {
		return Stat{}, fmt.Errorf("%w: stat start time %q", ErrMalformed, fields[19])
	}
	st.Start = start
	return st, nil
}
