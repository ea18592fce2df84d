package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	lib "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// ErrUnsupported is returned when the library has no system-call table for the architecture: a sandbox
// there runs only with the filter turned off.
var ErrUnsupported = errors.New("seccomp: no system-call table for this architecture")

// Filter is the default filter, assembled for the architecture the binary runs on. Install puts it on
// the calling process.
type Filter struct {
	insts []unix.SockFilter
}

// Default assembles the default filter (the table in rules.go) for runtime.GOARCH.
func Default() (*Filter, error) {
	insts, err := assemble(runtime.GOARCH, table)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	f := &Filter{insts: make([]unix.SockFilter, len(raw))}
	for i, r := range raw {
		f.insts[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return f, nil
}

// Len is the number of BPF instructions (the kernel takes at most 4096).
func (f *Filter) Len() int { return len(f.insts) }

// assemble turns rules into a program for the named architecture: a guard that kills the process for a
// call made through any other audit architecture, then the rules with argument conditions (argBlock),
// then the library's program for the rules without. Two things the library does are not used: its
// architecture check sends a foreign call to the policy's default action, here "allow" (a 32-bit int 0x80
// call on amd64 would pass every rule, its numbers differ); and its argument matching leaves the argument
// in the accumulator when a condition fails, so the next rule compares an argument with system-call numbers
// (TestArgumentRules caught personality(ADDR_NO_RANDOMIZE) passing). The library's own program starts by
// loading the architecture and the number again, so nothing before it can disturb it.
func assemble(goarch string, rules []rule) ([]bpf.Instruction, error) {
	info, err := arch.GetInfo(goarch)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, goarch)
	}
	if goarch != runtime.GOARCH {
		// The library assembles for the running architecture only; a foreign table would be a lie.
		return nil, fmt.Errorf("%w: %s (the binary runs on %s)", ErrUnsupported, goarch, runtime.GOARCH)
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}
	policy := lib.Policy{DefaultAction: lib.ActionAllow}
	for i, r := range rules {
		names := namesOn(info, r.names)
		if len(r.when) == 0 {
			if len(names) > 0 {
				policy.Syscalls = append(policy.Syscalls, lib.SyscallGroup{Names: names, Action: action(r.verdict)})
			}
			continue
		}
		if len(policy.Syscalls) > 0 {
			// The table reads in the order the filter decides: every rule with conditions runs first.
			return nil, fmt.Errorf("seccomp: rule %d (%s) has conditions but follows a rule without", i, r.names[0])
		}
		for _, name := range names {
			block, err := argBlock(uint32(info.SyscallNames[name]|info.SeccompMask), r)
			if err != nil {
				return nil, fmt.Errorf("seccomp: %s: %w", name, err)
			}
			prog = append(prog, block...)
		}
	}
	tail, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return append(prog, tail...), nil
}

// Offsets in struct seccomp_data {int nr; u32 arch; u64 instruction_pointer; u64 args[6];}.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argWord is the offset of the low (hi false) or high 32 bits of argument arg.
func argWord(arg uint32, hi bool) uint32 {
	off := offArgs + 8*arg
	if hi == (binary.NativeEndian.Uint16([]byte{1, 0}) == 1) { // little endian: the high word is second
		off += 4
	}
	return off
}

// argBlock is the program of rule r for the call numbered nr: load the number; unless it is nr, skip the
// block; else try each entry of r.when in turn, and return r's verdict at the first whose conditions all
// hold. A call no entry matches falls out of the block.
func argBlock(nr uint32, r rule) ([]bpf.Instruction, error) {
	var body []bpf.Instruction
	for _, entry := range r.when {
		var alt []bpf.Instruction
		var fails []int // indexes of the jumps taken when a condition does not hold
		test := func(off uint32, cond bpf.JumpTest, val uint32) {
			alt = append(alt, bpf.LoadAbsolute{Off: off, Size: 4}, bpf.JumpIf{Cond: cond, Val: val})
			fails = append(fails, len(alt)-1)
		}
		for _, c := range entry {
			if c.arg > 5 {
				return nil, fmt.Errorf("argument %d: a call has six", c.arg)
			}
			switch c.op {
			case anyBits:
				test(argWord(c.arg, false), bpf.JumpBitsSet, uint32(c.val))
			case low32Is:
				test(argWord(c.arg, false), bpf.JumpEqual, uint32(c.val))
			case is:
				test(argWord(c.arg, true), bpf.JumpEqual, uint32(c.val>>32))
				test(argWord(c.arg, false), bpf.JumpEqual, uint32(c.val))
			}
		}
		alt = append(alt, bpf.RetConstant{Val: uint32(action(r.verdict))})
		for _, i := range fails {
			j := alt[i].(bpf.JumpIf)
			j.SkipFalse = uint8(len(alt) - 1 - i) // past this entry's return
			alt[i] = j
		}
		body = append(body, alt...)
	}
	if len(body) > 255 {
		return nil, fmt.Errorf("%d instructions: too long for a jump", len(body))
	}
	head := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(len(body))},
	}
	return append(head, body...), nil
}

// namesOn keeps the names the architecture has.
func namesOn(info *arch.Info, names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := info.SyscallNames[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

func action(v verdict) lib.Action {
	switch v {
	case allow:
		return lib.ActionAllow
	case absent:
		return lib.ActionErrno | lib.Action(unix.ENOSYS)
	}
	return lib.ActionErrno | lib.Action(unix.EPERM)
}
