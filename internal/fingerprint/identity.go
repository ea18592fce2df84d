package fingerprint

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// FormatVersion is the identity and token format this package writes. CaptureChild sets Identity.Version to it.
const FormatVersion = 1

// Sources is where identity facts come from; injectable so tests can fake another boot or machine.
// The zero value reads the real host.
type Sources struct {
	// ProcRoot is the procfs mount whose PIDs the caller's PID namespace uses; "/proc" when empty.
	ProcRoot string
	// CgroupRoot is the mount point of the hierarchy Identity.Cgroup is relative to, e.g.
	// /sys/fs/cgroup/unified (v2 on a hybrid host), /sys/fs/cgroup (pure v2) or a v1 hierarchy on legacy
	// hosts. Empty means /sys/fs/cgroup.
	CgroupRoot string
	// BootID returns the boot id; nil reads <ProcRoot>/sys/kernel/random/boot_id.
	BootID func() (string, error)
	// MachineID returns the machine id; nil reads /etc/machine-id, else /var/lib/dbus/machine-id.
	MachineID func() (string, error)
}

func (s Sources) procRoot() string {
	if s.ProcRoot == "" {
		return "/proc"
	}
	return s.ProcRoot
}

func (s Sources) cgroupRoot() string {
	if s.CgroupRoot == "" {
		return "/sys/fs/cgroup"
	}
	return s.CgroupRoot
}

func (s Sources) statPath(pid int) string {
	return filepath.Join(s.procRoot(), strconv.Itoa(pid), "stat")
}

// Pinned returns s with the boot id and the machine id read once, now: its BootID and MachineID return
// those values (or the errors reading them gave). The boot id cannot change while a process lives; the
// machine id can be rewritten on disk, so Pinned is for a short-lived process (the shim reads them ahead,
// while it waits for its work) or one pass over many records (a Launcher's List), not for a process's life.
func (s Sources) Pinned() Sources {
	boot, bootErr := s.bootID()
	machine, machineErr := s.machineID()
	s.BootID = func() (string, error) { return boot, bootErr }
	s.MachineID = func() (string, error) { return machine, machineErr }
	return s
}

// KeepBootID returns s with the boot id read at the first call that needs it and kept from then on, for
// a long-lived holder (a Launcher: a sidecar verifies every record of a List against it). The boot id
// cannot change while a process lives (a new boot is a new process), so keeping it is exact; a read that
// fails, or gives an empty id, is not kept: the next call reads again. It is safe for concurrent use.
func (s Sources) KeepBootID() Sources {
	read := s.readBootID
	var (
		mu   sync.Mutex
		kept string
	)
	s.BootID = func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if kept != "" {
			return kept, nil
		}
		v, err := read()
		if err == nil && strings.TrimSpace(v) != "" {
			kept = v
		}
		return v, err
	}
	return s
}

// readBootID is the boot id as its source gives it, untrimmed and unchecked.
func (s Sources) readBootID() (string, error) {
	if s.BootID != nil {
		return s.BootID()
	}
	b, err := os.ReadFile(filepath.Join(s.procRoot(), "sys/kernel/random/boot_id"))
	return string(b), err
}

// bootID returns the trimmed boot id; an empty one is an error, never a match.
func (s Sources) bootID() (string, error) {
	v, err := s.readBootID()
	if err != nil {
		return "", fmt.Errorf("boot id: %w", err)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", errors.New("boot id: empty")
	}
	return v, nil
}

// machineID returns the trimmed machine id. "uninitialized" (systemd's first-boot placeholder) is an error:
// it is the same string on every such machine, so it identifies none of them.
func (s Sources) machineID() (string, error) {
	var v string
	var err error
	if s.MachineID != nil {
		v, err = s.MachineID()
	} else {
		var b []byte
		b, err = os.ReadFile("/etc/machine-id")
		if errors.Is(err, os.ErrNotExist) || (err == nil && strings.TrimSpace(string(b)) == "") {
			b, err = os.ReadFile("/var/lib/dbus/machine-id")
		}
		v = string(b)
	}
	if err != nil {
		return "", fmt.Errorf("machine id: %w", err)
	}
	v = strings.TrimSpace(v)
	if v == "" || v == "uninitialized" {
		return "", fmt.Errorf("machine id: %q is not an identity", v)
	}
	return v, nil
}

// Identity is who a worker is: the machine and boot it runs in, its cgroup, and its leader process.
// It is a plain value; store it as Token() and hand it back to Verify or Authorize.
type Identity struct {
	Version   int    // format version (FormatVersion)
	MachineID string // /etc/machine-id
	BootID    string // /proc/sys/kernel/random/boot_id
	PID1Start uint64 // start time of PID 1 (clock ticks since boot): tells two lives of one PID namespace apart
	Cgroup    string // cgroup path relative to Sources.CgroupRoot, "/a/b"; empty when the worker has no cgroup
	CgroupID  uint64 // inode of the cgroup directory; a cgroup re-created at the same path has another
	PID       int    // the leader's PID in the caller's PID namespace
	Start     uint64 // the leader's start time, field 22 of /proc/<pid>/stat
	// Unit and InvocationID name the systemd scope when the worker is scoped; recorded, not checked here
	// (checking them needs the bus, which is the launcher's business).
	Unit, InvocationID string
	// Unverified is set when any part could not be captured; such an identity is never signalled.
	Unverified bool
	Reason     string // why it is unverified, one line
}

// WithUnit returns a copy of i naming the systemd scope the worker runs in.
func (i Identity) WithUnit(unit, invocationID string) Identity {
	i.Unit, i.InvocationID = unit, invocationID
	return i
}

// Epoch returns the hermes instantiation_epoch, "<boot_id>:<pid1 start>", or "" when the boot id is unknown.
func (i Identity) Epoch() string {
	if i.BootID == "" {
		return ""
	}
	return i.BootID + ":" + strconv.FormatUint(i.PID1Start, 10)
}

// Fingerprint returns the hermes fingerprint column, "<epoch>|<start>", or "unverified" when the identity
// is unverified (hermes holds such a worker while it lives and never signals it).
func (i Identity) Fingerprint() string {
	if i.Unverified || i.BootID == "" {
		return "unverified"
	}
	return i.Epoch() + "|" + strconv.FormatUint(i.Start, 10)
}

// State is one verification answer.
type State string

// The verification answers. Only Running authorizes a signal.
const (
	Running        State = "running"         // verified: the worker is alive (its leader, or at least its cgroup)
	Exited         State = "exited"          // the cgroup is gone or empty (or, without a cgroup, the leader died)
	ForeignBoot    State = "foreign-boot"    // recorded in another boot (or another life of the PID namespace)
	ForeignMachine State = "foreign-machine" // recorded on another machine
	Recycled       State = "recycled"        // the PID or the cgroup path now names something else
	Unverified     State = "unverified"      // the identity was never fully captured: held, never signalled
	Malformed      State = "malformed"       // the token or fingerprint could not be read
)

// Verdict is a verification answer and why, in one line.
type Verdict struct {
	State  State
	Reason string
}

// String renders "state: reason".
func (v Verdict) String() string { return string(v.State) + ": " + v.Reason }

func verdict(s State, format string, args ...any) Verdict {
	return Verdict{State: s, Reason: oneLine(fmt.Sprintf(format, args...))}
}

// oneLine keeps reasons printable on one line whatever a path or an error message held.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, s)
}

// cleanCgroupPath returns p as "/a/b". The hierarchy root is refused: it holds every process on the host,
// and a whole-worker signal through it would hit them all.
func cleanCgroupPath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("cgroup path %q holds a NUL byte", p)
	}
	c := path.Clean("/" + p)
	if c == "/" {
		return "", fmt.Errorf("cgroup path %q is the hierarchy root, not a worker's cgroup", p)
	}
	return c, nil
}
