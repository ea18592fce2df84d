//go:build amd64 || arm64

package seccomp

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter is run on x/net/bpf's virtual machine against made-up seccomp_data: the instructions the
// kernel runs, without installing anything.

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

type call struct {
	nr   uint32
	args [6]uint64
	arch uint32 // zero: auditArch
}

// nr is the number of a call the table names; the test fails for any other name.
func nr(t *testing.T, name string) uint32 {
	t.Helper()
	for _, r := range table {
		for _, c := range r.calls {
			if c.name == name {
				return c.nr
			}
		}
	}
	t.Fatalf("%s is not in the table", name)
	return 0
}

// run evaluates the default filter for c and returns its answer.
func run(t *testing.T, c call) uint32 {
	t.Helper()
	raw, err := assemble(table)
	if err != nil {
		t.Fatal(err)
	}
	insts := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		insts[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}.Disassemble()
		if _, unknown := insts[i].(bpf.RawInstruction); unknown {
			t.Fatalf("instruction %d (%+v) is no classic BPF instruction", i, r)
		}
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	a := c.arch
	if a == 0 {
		a = auditArch
	}
	// struct seccomp_data in native (little endian) layout; the VM loads 32-bit words in network order,
	// so each word is stored big-endian where the kernel would have it.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], c.nr)
	binary.BigEndian.PutUint32(data[offArch:], a)
	for i, v := range c.args {
		binary.BigEndian.PutUint32(data[offArgs+8*i:], uint32(v))
		binary.BigEndian.PutUint32(data[offArgs+8*i+4:], uint32(v>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func TestDeniedCallsGetEPERM(t *testing.T) {
	n := 0
	for _, r := range table {
		if r.verdict != deny || len(r.when) != 0 {
			continue
		}
		for _, c := range r.calls {
			if c.name == "personality" {
				continue // its allowed values come first; TestArgumentRules
			}
			n++
			if got := run(t, call{nr: c.nr}); got != retEPERM {
				t.Errorf("%s: %#x, want EPERM (%#x)", c.name, got, retEPERM)
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d unconditional denials", n)
	}
}

func TestEverydayCallsPass(t *testing.T) {
	thread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM |
		unix.CLONE_THREAD | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	sigchld := uint64(unix.SIGCHLD)
	for name, c := range map[string]call{
		"read": {nr: unix.SYS_READ}, "write": {nr: unix.SYS_WRITE}, "mmap": {nr: unix.SYS_MMAP},
		"mprotect": {nr: unix.SYS_MPROTECT}, "execve": {nr: unix.SYS_EXECVE}, "exit_group": {nr: unix.SYS_EXIT_GROUP},
		"wait4": {nr: unix.SYS_WAIT4}, "socket": {nr: unix.SYS_SOCKET, args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM}},
		"prctl": {nr: unix.SYS_PRCTL}, "seccomp": {nr: unix.SYS_SECCOMP},
		"process_vm_readv": {nr: unix.SYS_PROCESS_VM_READV}, "name_to_handle_at": {nr: unix.SYS_NAME_TO_HANDLE_AT},
		"clone thread":                 {nr: unix.SYS_CLONE, args: [6]uint64{thread}},
		"clone fork":                   {nr: unix.SYS_CLONE, args: [6]uint64{sigchld}},
		"clone vfork":                  {nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_VM | unix.CLONE_VFORK | sigchld}},
		"openat read, mode garbage":    {nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_RDONLY, 0o4777}},
		"openat create 0644":           {nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}},
		"openat O_DIRECTORY 04777":     {nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_DIRECTORY, 0o4777}},
		"fchmodat 0755":                {nr: unix.SYS_FCHMODAT, args: [6]uint64{0, 0, 0o755}},
		"fchmod sticky":                {nr: unix.SYS_FCHMOD, args: [6]uint64{0, 0o1777}},
		"ioctl TCGETS":                 {nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TCGETS}},
		"ioctl TIOCGWINSZ":             {nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCGWINSZ}},
		"ioctl a neighbour of TIOCSTI": {nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI | 1<<16}},
		"personality PER_LINUX":        {nr: unix.SYS_PERSONALITY, args: [6]uint64{perLinux}},
		"personality query":            {nr: unix.SYS_PERSONALITY, args: [6]uint64{perQuery}},
	} {
		if got := run(t, c); got != retAllow {
			t.Errorf("%s: %#x, want allowed", name, got)
		}
	}
}

func TestArgumentRules(t *testing.T) {
	for name, tc := range map[string]struct {
		c    call
		want uint32
	}{
		"clone CLONE_NEWUSER":         {call{nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}}, retEPERM},
		"clone CLONE_NEWNS":           {call{nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWNS}}, retEPERM},
		"clone CLONE_NEWNET|1<<40":    {call{nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_NEWNET | 1<<40}}, retEPERM},
		"clone3":                      {call{nr: unix.SYS_CLONE3}, retENOSYS},
		"openat2":                     {call{nr: unix.SYS_OPENAT2}, retENOSYS},
		"ioctl TIOCSTI":               {call{nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCSTI}}, retEPERM},
		"ioctl TIOCSTI, high bits":    {call{nr: unix.SYS_IOCTL, args: [6]uint64{0, 1<<32 | unix.TIOCSTI}}, retEPERM},
		"ioctl TIOCLINUX, high bits":  {call{nr: unix.SYS_IOCTL, args: [6]uint64{0, 0xffffffff<<32 | unix.TIOCLINUX}}, retEPERM},
		"ioctl TIOCLINUX":             {call{nr: unix.SYS_IOCTL, args: [6]uint64{0, unix.TIOCLINUX}}, retEPERM},
		"fchmod 04755":                {call{nr: unix.SYS_FCHMOD, args: [6]uint64{0, 0o4755}}, retEPERM},
		"fchmodat 02755":              {call{nr: unix.SYS_FCHMODAT, args: [6]uint64{0, 0, 0o2755}}, retEPERM},
		"fchmodat2 06755":             {call{nr: unix.SYS_FCHMODAT2, args: [6]uint64{0, 0, 0o6755, 0}}, retEPERM},
		"mknodat S_IFREG|04755":       {call{nr: unix.SYS_MKNODAT, args: [6]uint64{0, 0, unix.S_IFREG | 0o4755}}, retEPERM},
		"openat O_CREAT 04755":        {call{nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}}, retEPERM},
		"openat O_TMPFILE 02700":      {call{nr: unix.SYS_OPENAT, args: [6]uint64{0, 0, unix.O_TMPFILE | unix.O_WRONLY, 0o2700}}, retEPERM},
		"personality ADDR_NO_RANDOM":  {call{nr: unix.SYS_PERSONALITY, args: [6]uint64{0x0040000}}, retEPERM},
		"personality PER_LINUX32":     {call{nr: unix.SYS_PERSONALITY, args: [6]uint64{8}}, retEPERM},
		"personality 1<<32 (not 0)":   {call{nr: unix.SYS_PERSONALITY, args: [6]uint64{1 << 32}}, retEPERM},
		"personality query, high bit": {call{nr: unix.SYS_PERSONALITY, args: [6]uint64{1<<63 | perQuery}}, retEPERM},
	} {
		if got := run(t, tc.c); got != tc.want {
			t.Errorf("%s: %#x, want %#x", name, got, tc.want)
		}
	}
}

// The rules of archTable (x86-64's chmod, creat, mknod, open, iopl, ioperm).
func TestArchRules(t *testing.T) {
	for _, r := range archTable {
		for _, c := range r.calls {
			args := [6]uint64{}
			switch c.name {
			case "open":
				args = [6]uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}
				if got := run(t, call{nr: c.nr, args: [6]uint64{0, unix.O_RDONLY, 0o4755}}); got != retAllow {
					t.Errorf("open O_RDONLY: %#x, want allowed", got)
				}
			case "chmod", "creat", "mknod":
				args = [6]uint64{0, unix.S_IFREG | 0o4755}
				if got := run(t, call{nr: c.nr, args: [6]uint64{0, 0o755}}); got != retAllow {
					t.Errorf("%s 0755: %#x, want allowed", c.name, got)
				}
			}
			if got := run(t, call{nr: c.nr, args: args}); got != retEPERM {
				t.Errorf("%s%v: %#x, want EPERM", c.name, args[:3], got)
			}
		}
	}
}

// A call through another audit architecture uses another numbering: the table means nothing for it.
func TestForeignArchitectureIsKilled(t *testing.T) {
	for _, a := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64} {
		if a == auditArch {
			continue
		}
		for _, name := range []string{"mount", "keyctl"} {
			if got := run(t, call{nr: nr(t, name), arch: a}); got != retKill {
				t.Errorf("%s through %#x: %#x, want kill", name, a, got)
			}
		}
		if got := run(t, call{nr: unix.SYS_READ, arch: a}); got != retKill {
			t.Errorf("read through %#x: %#x, want kill", a, got)
		}
	}
	if x32Bit != 0 {
		// x32 shares AUDIT_ARCH_X86_64 and sets bit 30 of the number.
		if got := run(t, call{nr: x32Bit | unix.SYS_READ}); got != retKill {
			t.Errorf("x32 read: %#x, want kill", got)
		}
	}
}

// Every call of the table is in docs/security.md's table, as `name`, and the section names no call the
// filter does not have: the page is the reference for what a worker may not do.
func TestTableIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "### The system-call filter")
	if !ok {
		t.Fatal("docs/security.md has no \"The system-call filter\" section")
	}
	sec, _, _ = strings.Cut(sec, "\n### ")
	for _, r := range table {
		for _, c := range r.calls {
			if !strings.Contains(sec, "`"+c.name+"`") {
				t.Errorf("docs/security.md's filter table does not name `%s`", c.name)
			}
		}
	}
}

func TestAssembleRefusesBadRules(t *testing.T) {
	if _, err := assemble([]rule{{calls: []sysnum{{"x", 1}}, when: [][]cond{{{6, anyBits, 1}}}}}); err == nil {
		t.Error("a condition on a seventh argument assembled")
	}
	f, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.insts); n < 50 || n > 4096 { // the kernel takes at most 4096
		t.Fatalf("%d instructions", n)
	}
}

// BenchmarkDefault is what assembling costs the init stub on every sandboxed launch.
func BenchmarkDefault(b *testing.B) {
	for b.Loop() {
		if _, err := Default(); err != nil {
			b.Fatal(err)
		}
	}
}
