package seccomp

import "golang.org/x/sys/unix"

// auditArch is the only architecture the filter lets calls through for; x32Bit marks a call of the x32 ABI,
// which shares it and numbers its calls differently: such a call is killed too.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)

// archTable are the calls x86-64 has and arm64 does not: the pre-*at file calls and port I/O. They come
// after table's rules; a rule with conditions after one without is fine, each block loads the number.
var archTable = []rule{
	{calls: []sysnum{{"chmod", unix.SYS_CHMOD}, {"creat", unix.SYS_CREAT}, {"mknod", unix.SYS_MKNOD}},
		verdict: deny, when: [][]cond{{{1, anyBits, setIDBits}}}},
	{calls: []sysnum{{"open", unix.SYS_OPEN}}, verdict: deny,
		when: [][]cond{{{1, anyBits, creating}, {2, anyBits, setIDBits}}}},
	{calls: []sysnum{{"iopl", unix.SYS_IOPL}, {"ioperm", unix.SYS_IOPERM}}, verdict: deny},
}
