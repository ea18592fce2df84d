// Package seccomp is the system-call filter every sandboxed worker runs under: hlaunch's own table of
// denied calls (rules.go, rules_<arch>.go), assembled into a classic BPF program (filter.go) and installed
// by the sandbox's init stub right before it starts the target, after no_new_privs (install_linux.go).
//
// The filter is a deny list on top of an allow-by-default policy: it refuses what a worker never needs and
// what turns a small hole into a big one (the keyring, bpf, perf events, userfaultfd, io_uring, modules,
// kexec, mounts and namespaces, terminal injection, set-user-ID modes, ...). A denied call fails with
// EPERM; clone3 and openat2, whose arguments live in a structure a filter cannot read, fail with ENOSYS so
// that libc and other callers fall back to clone and openat, which it can read. A call made through any
// other audit architecture than the binary's own (the 32-bit int 0x80 entry on amd64, the x32 ABI) kills
// the process: the table's numbers are only valid for the native one. docs/security.md has the table and
// the reason for every entry; ADR 0008 the alternatives (among them github.com/elastic/go-seccomp-bpf,
// rejected on its start-up cost and two bugs that its unit tests here caught) and the numbers.
//
// The numbers are x/sys/unix's SYS_ constants, generated from the kernel's headers for each GOARCH; the
// table is written for amd64 and arm64, and on any other architecture Default fails (ErrUnsupported)
// rather than install nothing.
package seccomp
