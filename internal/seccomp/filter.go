//go:build amd64 || arm64

package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// verdict is what the filter answers for a call a rule matches.
type verdict int

const (
	// deny fails the call with EPERM, the answer a program already handles for a call it lacks the
	// privilege for.
	deny verdict = iota
	// absent fails the call with ENOSYS, as if the kernel were too old to have it: libc falls back to an
	// older call whose arguments the filter can read (clone3 to clone, openat2 to openat).
	absent
	// allow lets the call through: an exception to a deny of the same call further down the table.
	allow
)

// ret is the filter's return value for v.
func (v verdict) ret() uint32 {
	switch v {
	case allow:
		return unix.SECCOMP_RET_ALLOW
	case absent:
		return unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	}
	return unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
}

// op is how a cond tests an argument.
type op int

const (
	// anyBits holds when the argument has any bit of val set; val fits in 32 bits and only the argument's
	// low half is read, as the kernel reads only that of an int, flags or mode argument.
	anyBits op = iota
	// low32Is holds when the argument's low 32 bits equal val, whatever its high half: ioctl's command is an
	// unsigned int to the kernel, and a 64-bit compare would let 0x1_0000_5412 through as TIOCSTI.
	low32Is
	// is holds when all 64 bits equal val. Only for allow rules, where matching less is the safe error.
	is
)

// cond is one test on one argument of a call (0-5).
type cond struct {
	arg uint32
	op  op
	val uint64
}

// Filter is the default filter, assembled for the architecture the binary is built for. Install puts it
// on the calling process.
type Filter struct {
	insts []unix.SockFilter
}

// Default assembles the default filter (table, rules.go).
func Default() (*Filter, error) {
	insts, err := assemble(table)
	if err != nil {
		return nil, err
	}
	return &Filter{insts: insts}, nil
}

// Supported says whether Default can assemble a filter on this architecture: nil here.
func Supported() error { return nil }

// Offsets in struct seccomp_data {int nr; u32 arch; u64 instruction_pointer; u64 args[6];}. Both
// architectures are little endian: an argument's low word comes first.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// The classic BPF instructions the filter is made of, straight into the kernel's struct sock_filter: a
// load of a 32-bit word of seccomp_data, compares of the accumulator with a constant that skip jt
// instructions when they hold and jf when not, an unconditional skip, and a return.
func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}
func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jt, Jf: jf, K: k}
}
func jset(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, Jt: jt, Jf: jf, K: k}
}
func skip(n uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA, K: n} }
func ret(v uint32) unix.SockFilter  { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v} }

// assemble turns rules into a program: a guard that kills the process for a call made through any other
// audit architecture (or, on x86-64, the x32 ABI), whose numbers the table does not describe; each rule in
// order; and "allow" for the rest. Every rule's block loads the call's number first, because an argument
// test leaves the argument in the accumulator.
func assemble(rules []rule) ([]unix.SockFilter, error) {
	kill := ret(unix.SECCOMP_RET_KILL_PROCESS)
	prog := make([]unix.SockFilter, 0, 256)
	prog = append(prog, load(offArch), jeq(auditArch, 1, 0), kill)
	if x32Bit != 0 {
		prog = append(prog, load(offNr), jset(x32Bit, 0, 1), kill)
	}
	for _, r := range rules {
		var err error
		if len(r.when) == 0 {
			prog, err = callsBlock(prog, r)
		} else {
			for _, c := range r.calls {
				if prog, err = argBlock(prog, c.nr, r); err != nil {
					break
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("seccomp: %s: %w", r.calls[0].name, err)
		}
	}
	prog = append(prog, ret(unix.SECCOMP_RET_ALLOW))
	if len(prog) > 4096 {
		return nil, fmt.Errorf("seccomp: %d instructions, the kernel takes 4096", len(prog))
	}
	return prog, nil
}

// callsBlock appends the program of a rule without conditions: load the number; compare it with each
// call's; on a match return the verdict, else skip the return.
func callsBlock(prog []unix.SockFilter, r rule) ([]unix.SockFilter, error) {
	n := len(r.calls)
	if n > 255 {
		return nil, fmt.Errorf("%d calls: too many for one jump", n)
	}
	prog = append(prog, load(offNr))
	for i, c := range r.calls {
		prog = append(prog, jeq(c.nr, uint8(n-i), 0))
	}
	return append(prog, skip(1), ret(r.verdict.ret())), nil
}

// argBlock appends the program of rule r for the call numbered nr: load the number; unless it is nr, skip
// the block; else try each entry of r.when in turn, and return r's verdict at the first whose conditions
// all hold. A call no entry matches falls out of the block.
func argBlock(prog []unix.SockFilter, nr uint32, r rule) ([]unix.SockFilter, error) {
	head := len(prog)
	prog = append(prog, load(offNr), jeq(nr, 0, 0)) // jf set below, once the block's length is known
	for _, entry := range r.when {
		start := len(prog)
		var fails []int // the tests that skip to the next entry when their condition does not hold
		test := func(off uint32, j unix.SockFilter) {
			prog = append(prog, load(off), j)
			fails = append(fails, len(prog)-1)
		}
		for _, c := range entry {
			if c.arg > 5 {
				return nil, fmt.Errorf("argument %d: a call has six", c.arg)
			}
			lo := offArgs + 8*c.arg
			switch c.op {
			case anyBits:
				test(lo, jset(uint32(c.val), 0, 0))
			case low32Is:
				test(lo, jeq(uint32(c.val), 0, 0))
			case is:
				test(lo+4, jeq(uint32(c.val>>32), 0, 0))
				test(lo, jeq(uint32(c.val), 0, 0))
			}
		}
		prog = append(prog, ret(r.verdict.ret()))
		if len(prog)-start > 255 {
			return nil, fmt.Errorf("an entry of %d instructions: too long for one jump", len(prog)-start)
		}
		for _, i := range fails {
			prog[i].Jf = uint8(len(prog) - 1 - i) // past this entry's return
		}
	}
	n := len(prog) - head - 2
	if n > 255 {
		return nil, fmt.Errorf("%d instructions: too long for one jump", n)
	}
	prog[head+1].Jf = uint8(n)
	return prog, nil
}
