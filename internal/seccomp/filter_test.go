package seccomp

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter is run on x/net/bpf's virtual machine against made-up seccomp_data: the same instructions
// the kernel runs, without installing anything.

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

type call struct {
	name string
	args [6]uint64
	arch uint32 // zero: the native one
	nr   int    // used when name is empty
}

func native(t *testing.T) *arch.Info {
	t.Helper()
	info, err := arch.GetInfo(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// run evaluates the default filter for c and returns the filter's answer.
func run(t *testing.T, c call) uint32 {
	t.Helper()
	info := native(t)
	insts, err := assemble(runtime.GOARCH, table)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	nr := c.nr
	if c.name != "" {
		n, ok := info.SyscallNames[c.name]
		if !ok {
			t.Fatalf("%s: not a system call on %s", c.name, info.Name)
		}
		nr = n
	}
	a := c.arch
	if a == 0 {
		a = uint32(info.ID)
	}
	// struct seccomp_data {int nr; u32 arch; u64 instruction_pointer; u64 args[6];}, in native (little
	// endian) layout; the VM loads 32-bit words in network order, so each word is stored big-endian.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], a)
	for i, v := range c.args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(v))
		binary.BigEndian.PutUint32(data[20+8*i:], uint32(v>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func TestDeniedCallsGetEPERM(t *testing.T) {
	info := native(t)
	for _, r := range table {
		if r.verdict != deny || len(r.when) != 0 {
			continue
		}
		for _, name := range namesOn(info, r.names) {
			if name == "personality" {
				continue // its allowed values come first; tested below
			}
			if got := run(t, call{name: name}); got != retEPERM {
				t.Errorf("%s: %#x, want EPERM (%#x)", name, got, retEPERM)
			}
		}
	}
}

func TestEverydayCallsPass(t *testing.T) {
	thread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM |
		unix.CLONE_THREAD | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	for _, c := range []call{
		{name: "read"}, {name: "write"}, {name: "mmap"}, {name: "mprotect"}, {name: "execve"},
		{name: "exit_group"}, {name: "wait4"}, {name: "socket", args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM}},
		{name: "clone", args: [6]uint64{thread}},
		{name: "clone", args: [6]uint64{uint64(unix.SIGCHLD)}}, // fork
		{name: "clone", args: [6]uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}},
		{name: "openat", args: [6]uint64{0, 0, unix.O_RDONLY, 0o4777}}, // no O_CREAT: the mode is not used
		{name: "openat", args: [6]uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o644}},
		{name: "fchmodat", args: [6]uint64{0, 0, 0o755}},
		{name: "fchmod", args: [6]uint64{0, 0o1777}}, // sticky is not set-ID
		{name: "ioctl", args: [6]uint64{0, unix.TCGETS}},
		{name: "ioctl", args: [6]uint64{0, unix.TIOCGWINSZ}},
		{name: "ioctl", args: [6]uint64{0, unix.TIOCSTI | 1<<16}}, // a neighbour of TIOCSTI, not it
		{name: "personality", args: [6]uint64{0}},
		{name: "personality", args: [6]uint64{0xffffffff}},
		{name: "process_vm_readv"}, {name: "name_to_handle_at"}, {name: "seccomp"}, {name: "prctl"},
	} {
		if got := run(t, c); got != retAllow {
			t.Errorf("%s%v: %#x, want allowed", c.name, c.args[:4], got)
		}
	}
}

func TestArgumentRules(t *testing.T) {
	for _, tc := range []struct {
		c    call
		want uint32
	}{
		{call{name: "clone", args: [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}}, retEPERM},
		{call{name: "clone", args: [6]uint64{unix.CLONE_NEWNS}}, retEPERM},
		{call{name: "clone", args: [6]uint64{unix.CLONE_NEWNET | 1<<40}}, retEPERM},
		{call{name: "clone3"}, retENOSYS},
		{call{name: "openat2"}, retENOSYS},
		{call{name: "ioctl", args: [6]uint64{0, unix.TIOCSTI}}, retEPERM},
		{call{name: "ioctl", args: [6]uint64{0, 1<<32 | unix.TIOCSTI}}, retEPERM}, // the kernel reads an int
		{call{name: "ioctl", args: [6]uint64{0, 0xffffffff<<32 | unix.TIOCLINUX}}, retEPERM},
		{call{name: "ioctl", args: [6]uint64{0, unix.TIOCLINUX}}, retEPERM},
		{call{name: "fchmod", args: [6]uint64{0, 0o4755}}, retEPERM},
		{call{name: "fchmodat", args: [6]uint64{0, 0, 0o2755}}, retEPERM},
		{call{name: "fchmodat2", args: [6]uint64{0, 0, 0o6755, 0}}, retEPERM},
		{call{name: "mknodat", args: [6]uint64{0, 0, unix.S_IFREG | 0o4755}}, retEPERM},
		{call{name: "openat", args: [6]uint64{0, 0, unix.O_CREAT | unix.O_WRONLY, 0o4755}}, retEPERM},
		{call{name: "openat", args: [6]uint64{0, 0, unix.O_TMPFILE | unix.O_WRONLY, 0o2700}}, retEPERM},
		{call{name: "personality", args: [6]uint64{0x0040000 /* ADDR_NO_RANDOMIZE */}}, retEPERM},
		{call{name: "personality", args: [6]uint64{8}}, retEPERM},       // PER_LINUX32
		{call{name: "personality", args: [6]uint64{1 << 32}}, retEPERM}, // not exactly PER_LINUX
	} {
		if got := run(t, tc.c); got != tc.want {
			t.Errorf("%s%v: %#x, want %#x", tc.c.name, tc.c.args[:4], got, tc.want)
		}
	}
}

func TestLegacyCallsWhereTheyExist(t *testing.T) {
	info := native(t)
	for _, tc := range []struct {
		c    call
		want uint32
	}{
		{call{name: "chmod", args: [6]uint64{0, 0o4755}}, retEPERM},
		{call{name: "chmod", args: [6]uint64{0, 0o755}}, retAllow},
		{call{name: "creat", args: [6]uint64{0, 0o2755}}, retEPERM},
		{call{name: "open", args: [6]uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}}, retEPERM},
		{call{name: "open", args: [6]uint64{0, unix.O_RDONLY, 0o4755}}, retAllow},
		{call{name: "iopl"}, retEPERM},
	} {
		if _, ok := info.SyscallNames[tc.c.name]; !ok {
			continue // arm64 has only the *at forms and no port I/O
		}
		if got := run(t, tc.c); got != tc.want {
			t.Errorf("%s%v: %#x, want %#x", tc.c.name, tc.c.args[:4], got, tc.want)
		}
	}
}

// A call through another audit architecture uses another numbering: the table means nothing for it.
func TestForeignArchitectureIsKilled(t *testing.T) {
	other := arch.I386.ID
	if native(t).ID == other {
		other = arch.X86_64.ID
	}
	for _, name := range []string{"read", "mount"} {
		if got := run(t, call{name: name, arch: uint32(other)}); got != retKill {
			t.Errorf("%s through %v: %#x, want kill", name, other, got)
		}
	}
	if runtime.GOARCH == "amd64" {
		// x32 shares AUDIT_ARCH_X86_64 and sets bit 30 of the number: refused as unknown.
		if got := run(t, call{nr: 0x40000000 | 165}); got != retENOSYS {
			t.Errorf("x32 mount: %#x, want ENOSYS", got)
		}
	}
}

// Every name in the table is a system call of some architecture the library knows (a typo would be
// dropped silently, as a call the architecture lacks is), and the calls the filter exists for are in the
// filter of both architectures hlaunch is built for.
func TestTableNamesExist(t *testing.T) {
	for _, r := range table {
		for _, name := range r.names {
			found := false
			for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64, arch.I386, arch.ARM} {
				if _, ok := a.SyscallNames[name]; ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%q is no architecture's system call", name)
			}
		}
	}
	must := []string{"add_key", "keyctl", "bpf", "perf_event_open", "userfaultfd", "finit_module", "kexec_file_load",
		"mount", "umount2", "move_mount", "fsopen", "unshare", "setns", "clone", "clone3", "ioctl", "fchmodat",
		"fchmodat2", "openat", "openat2", "ptrace", "personality", "io_uring_setup"}
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		var have []string
		for _, r := range table {
			have = append(have, namesOn(a, r.names)...)
		}
		for _, name := range must {
			if !slices.Contains(have, name) {
				t.Errorf("%s: %s is not filtered", a.Name, name)
			}
		}
	}
}

func TestDefaultAssembles(t *testing.T) {
	f, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() == 0 || f.Len() > 4096 {
		t.Fatalf("%d instructions", f.Len())
	}
	if _, err := assemble("riscv64", table); err == nil {
		t.Fatal("riscv64: assembled without a table")
	}
}
