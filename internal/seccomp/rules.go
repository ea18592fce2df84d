//go:build amd64 || arm64

package seccomp

import "golang.org/x/sys/unix"

// sysnum is a system call: its name (as docs/security.md's table and strace say it) and its number on the
// architecture the binary is built for (x/sys/unix's SYS_ constants, generated from the kernel's headers).
type sysnum struct {
	name string
	nr   uint32
}

// rule is one row of the table. Rules are tried in order: the first that matches decides.
type rule struct {
	calls []sysnum
	// when is empty to match every call of calls; else the rule matches when any of its entries holds,
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

// table is the default filter, for the calls both architectures have; archTable (rules_<arch>.go) adds
// the calls only one has. docs/security.md ("The system-call filter") gives the reason for every row;
// TestTableIsDocumented keeps the two in step.
var table = append([]rule{
	{calls: []sysnum{{"personality", unix.SYS_PERSONALITY}}, verdict: allow,
		when: [][]cond{{{0, is, perLinux}}, {{0, is, perQuery}}}},
	{calls: []sysnum{{"openat", unix.SYS_OPENAT}}, verdict: deny,
		when: [][]cond{{{2, anyBits, creating}, {3, anyBits, setIDBits}}}},
	{calls: []sysnum{{"ioctl", unix.SYS_IOCTL}}, verdict: deny,
		when: [][]cond{{{1, low32Is, unix.TIOCSTI}}, {{1, low32Is, unix.TIOCLINUX}}}},
	{calls: []sysnum{{"clone", unix.SYS_CLONE}}, verdict: deny, when: [][]cond{{{0, anyBits, newNamespaces}}}},
	{calls: []sysnum{{"fchmod", unix.SYS_FCHMOD}}, verdict: deny, when: [][]cond{{{1, anyBits, setIDBits}}}},
	{calls: []sysnum{{"fchmodat", unix.SYS_FCHMODAT}, {"fchmodat2", unix.SYS_FCHMODAT2}, {"mknodat", unix.SYS_MKNODAT}},
		verdict: deny, when: [][]cond{{{2, anyBits, setIDBits}}}},
	{calls: []sysnum{{"clone3", unix.SYS_CLONE3}, {"openat2", unix.SYS_OPENAT2}}, verdict: absent},
	{calls: []sysnum{
		{"add_key", unix.SYS_ADD_KEY}, {"request_key", unix.SYS_REQUEST_KEY}, {"keyctl", unix.SYS_KEYCTL},
		{"bpf", unix.SYS_BPF}, {"perf_event_open", unix.SYS_PERF_EVENT_OPEN}, {"userfaultfd", unix.SYS_USERFAULTFD},
		{"init_module", unix.SYS_INIT_MODULE}, {"finit_module", unix.SYS_FINIT_MODULE},
		{"delete_module", unix.SYS_DELETE_MODULE}, {"kexec_load", unix.SYS_KEXEC_LOAD},
		{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
		{"mount", unix.SYS_MOUNT}, {"umount2", unix.SYS_UMOUNT2}, {"pivot_root", unix.SYS_PIVOT_ROOT},
		{"move_mount", unix.SYS_MOVE_MOUNT}, {"open_tree", unix.SYS_OPEN_TREE}, {"open_tree_attr", unix.SYS_OPEN_TREE_ATTR},
		{"fsopen", unix.SYS_FSOPEN}, {"fsmount", unix.SYS_FSMOUNT}, {"fsconfig", unix.SYS_FSCONFIG},
		{"fspick", unix.SYS_FSPICK}, {"mount_setattr", unix.SYS_MOUNT_SETATTR},
		{"unshare", unix.SYS_UNSHARE}, {"setns", unix.SYS_SETNS},
		{"ptrace", unix.SYS_PTRACE}, {"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV}, {"kcmp", unix.SYS_KCMP},
		{"personality", unix.SYS_PERSONALITY},
		{"acct", unix.SYS_ACCT}, {"swapon", unix.SYS_SWAPON}, {"swapoff", unix.SYS_SWAPOFF}, {"reboot", unix.SYS_REBOOT},
		{"quotactl", unix.SYS_QUOTACTL}, {"quotactl_fd", unix.SYS_QUOTACTL_FD},
		{"settimeofday", unix.SYS_SETTIMEOFDAY}, {"clock_settime", unix.SYS_CLOCK_SETTIME},
		{"adjtimex", unix.SYS_ADJTIMEX}, {"clock_adjtime", unix.SYS_CLOCK_ADJTIME},
		{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE}, {"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
		{"syslog", unix.SYS_SYSLOG},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP}, {"io_uring_enter", unix.SYS_IO_URING_ENTER},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER},
	}, verdict: deny},
}, archTable...)
