package main

import (
	"errors"
	"strconv"
)

// pidFlag is a --pid value: canonical decimal from 1 to 2^31-1, one spelling per process. An int flag
// would take strconv's base prefixes, so "032356" would be octal (PID 13550), "0x34ee" hex, "+13550" and
// "1_3550" the same, and 4294980846 reached pidfd_open as 13550 (pid_t is 32 bits); a hermes row's PID
// column must name exactly the process it says.
type pidFlag int

func (p *pidFlag) String() string { return strconv.Itoa(int(*p)) }

// Type names the value in help and errors (flagerr.Message: "a process id").
func (p *pidFlag) Type() string { return "pid" }

// Set parses a PID.
func (p *pidFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != s {
		return errors.New("not a PID")
	}
	*p = pidFlag(n)
	return nil
}
