package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// UserNS is the one decision whether this process may build a sandbox, as far as user namespaces go:
// SysProcAttr asks for one from it, the launcher refuses an unprivileged --sandbox with its Err, and
// `hlaunch doctor` prints it, so the three cannot disagree.
type UserNS struct {
	// Err is nil when a sandbox can be built: for root (which needs no user namespace), or when the kernel
	// lets this unprivileged user create one. Otherwise it matches ErrNoUserNamespace and names the knob
	// that forbids it.
	Err error
	// Detail says why, in words, when Err is nil (the knob values read, or that root needs none).
	Detail string
}

// UserNamespaces decides for this process (its effective uid, the knobs of its kernel).
func UserNamespaces() UserNS { return decideUserNS(os.Geteuid(), os.ReadFile) }

// decideUserNS decides for effective uid euid, reading the knobs with read.
func decideUserNS(euid int, read func(string) ([]byte, error)) UserNS {
	// The kernel settings that forbid an unprivileged user namespace, with the value that forbids it: the
	// count limit (any kernel), Debian's and Ubuntu's older switch, and Ubuntu 23.10's AppArmor
	// restriction. A knob the kernel does not have forbids nothing.
	knobs := [...]struct{ file, bad string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	}
	var seen []string
	for _, k := range knobs {
		b, err := read(k.file)
		if err != nil {
			continue // the knob does not exist on this kernel
		}
		v := strings.TrimSpace(string(b))
		if euid != 0 && v == k.bad {
			return UserNS{Err: fmt.Errorf("%w: %s is %s", ErrNoUserNamespace, k.file, v)}
		}
		seen = append(seen, fmt.Sprintf("%s=%s", knobName(k.file), v))
	}
	knobsRead := strings.Join(seen, ", ")
	if len(seen) == 0 {
		knobsRead = "no knob restricts them on this kernel"
	}
	if euid == 0 {
		return UserNS{Detail: "not needed: root builds the sandbox without one (" + knobsRead + ")"}
	}
	return UserNS{Detail: knobsRead}
}

// knobName is the sysctl name of a /proc/sys file: /proc/sys/user/max_user_namespaces is
// user.max_user_namespaces.
func knobName(file string) string {
	return strings.ReplaceAll(strings.TrimPrefix(file, "/proc/sys/"), "/", ".")
}
