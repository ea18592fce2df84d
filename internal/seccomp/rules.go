package seccomp

import "golang.org/x/sys/unix"

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

// String names the verdict as docs/security.md's table does.
func (v verdict) String() string {
	switch v {
	case deny:
		return "EPERM"
	case absent:
		return "ENOSYS"
	case allow:
		return "allowed"
	}
	return "unknown"
}

// op is how a cond tests an argument.
type op int

const (
	// anyBits holds when the argument has any bit of val set; val fits in 32 bits, so the argument's high
	// half is ignored, as the kernel ignores it for an int or mode argument.
	anyBits op = iota
	// low32Is holds when the argument's low 32 bits equal val, whatever its high half: ioctl's command is
	// an unsigned int to the kernel, and an exact 64-bit compare would let 0x1_0000_5412 through as
	// TIOCSTI.
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

// rule is one row of the table. Rules are tried in order: the first that matches decides.
type rule struct {
	// names are the calls; a name the architecture does not have (chmod on arm64, iopl off x86) is left
	// out of that architecture's filter.
	names []string
	// when is empty to match every call of names; else the rule matches when any of its entries holds,
	// and an entry holds when all of its conditions do.
	when    [][]cond
	verdict verdict
}

// setIDBits are the mode bits that make an executable run as its owner or group.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// creating are the open flags under which the mode argument is used: O_CREAT, and O_TMPFILE without
// the O_DIRECTORY it includes (an unnamed file linkat can name later).
const creating = unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// newNamespaces are clone's flags that make a new namespace.
const newNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// The personalities a worker may set: PER_LINUX, the default, and 0xffffffff, which only asks.
const (
	perLinux = 0
	perQuery = 0xffffffff
)

// table is the default filter. Rules with conditions come first, in the order the filter tries them, then
// the rules without (assemble refuses another order). docs/security.md ("The system-call filter") gives
// the reason for every row; TestTableIsDocumented keeps the two in step.
var table = []rule{
	{names: []string{"personality"}, verdict: allow,
		when: [][]cond{{{0, is, perLinux}}, {{0, is, perQuery}}}},
	{names: []string{"clone"}, verdict: deny, when: [][]cond{{{0, anyBits, newNamespaces}}}},
	{names: []string{"ioctl"}, verdict: deny,
		when: [][]cond{{{1, low32Is, unix.TIOCSTI}}, {{1, low32Is, unix.TIOCLINUX}}}},
	{names: []string{"chmod", "fchmod", "creat", "mknod"}, verdict: deny, when: [][]cond{{{1, anyBits, setIDBits}}}},
	{names: []string{"fchmodat", "fchmodat2", "mknodat"}, verdict: deny, when: [][]cond{{{2, anyBits, setIDBits}}}},
	{names: []string{"open"}, verdict: deny, when: [][]cond{{{1, anyBits, creating}, {2, anyBits, setIDBits}}}},
	{names: []string{"openat"}, verdict: deny, when: [][]cond{{{2, anyBits, creating}, {3, anyBits, setIDBits}}}},
	{names: []string{"clone3", "openat2"}, verdict: absent},
	{names: []string{
		"add_key", "request_key", "keyctl",
		"bpf", "perf_event_open", "userfaultfd",
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
		"fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
		"unshare", "setns",
		"ptrace", "process_vm_writev", "kcmp", "personality",
		"acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd",
		"settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
		"lookup_dcookie", "open_by_handle_at", "iopl", "ioperm", "vm86", "vm86old", "syslog",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
	}, verdict: deny},
}
