// Package affinity keeps a short-lived hlaunch process on the CPU it started on and gives the children it
// starts the CPUs it started with.
//
// A foreground launch is a burst of Go runtime hand-offs between threads: the signal subscription alone is
// a round trip to the runtime's signal thread per signal, and sysmon wakes every 20 µs at first. On a VM
// each hand-off to a thread on another vCPU is an inter-processor interrupt, and so is each TLB shootdown
// of a multi-threaded process; on one CPU they are plain run-queue operations. ADR 0006 has the numbers.
//
// A target must not inherit the pin: Spawn (internal/handshake) sets the forking thread to the original
// set before it forks, and the init stub and the shim, which start pinned, apply it before they start
// the target, so a target starts with exactly the CPUs hlaunch was started with.
package affinity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// Set is a set of CPUs a thread may run on. The zero Set is empty: there is nothing to restore.
type Set struct {
	cpus unix.CPUSet
}

// Current returns the calling thread's set.
func Current() (Set, error) {
	var s Set
	if err := unix.SchedGetaffinity(0, &s.cpus); err != nil {
		return Set{}, fmt.Errorf("sched_getaffinity: %w", err)
	}
	return s, nil
}

// Pin moves every thread of this process onto the CPU the caller runs on and returns the set the calling
// thread had before, which is what children must get back (ApplyToThread before forking). When Pin fails
// part way, the returned set is still the one to restore; it is zero only if nothing was changed.
//
// Threads the runtime creates after Pin inherit the pin from the thread that creates them. A thread made
// by a not yet pinned thread while Pin runs keeps its wider set, which costs only speed.
func Pin() (Set, error) {
	orig, err := Current()
	if err != nil {
		return Set{}, err
	}
	cpu, err := currentCPU()
	if err != nil {
		return Set{}, fmt.Errorf("getcpu: %w", err)
	}
	if !orig.cpus.IsSet(cpu) { // the set changed under us; leave it alone
		return Set{}, fmt.Errorf("running on cpu %d, outside the thread's set %s", cpu, orig)
	}
	var one Set
	one.cpus.Set(cpu)
	tids, err := threads()
	if err != nil {
		return Set{}, err
	}
	return orig, one.setThreads(tids)
}

// ApplyToAll sets every thread of this process to s: a helper that started pinned (the shim, a sandbox's
// init) and lives as long as its worker goes back to the worker's set once the worker runs.
//
// A thread the runtime makes while the listing is set is made by a thread that was still pinned and
// inherits the pin, so the threads are listed again until a listing holds none that was not set; the
// passes are bounded (a runtime that keeps making threads keeps at most those on the pin, which costs
// only speed).
func (s Set) ApplyToAll() error {
	if s.IsZero() {
		return errors.New("affinity: empty CPU set")
	}
	done := make(map[int]bool)
	for pass := 0; pass < maxApplyPasses; pass++ {
		tids, err := threads()
		if err != nil {
			return err
		}
		var fresh []int
		for _, tid := range tids {
			if !done[tid] {
				fresh = append(fresh, tid)
				done[tid] = true
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		if err := s.setThreads(fresh); err != nil {
			return err
		}
	}
	return nil
}

// maxApplyPasses bounds ApplyToAll's listings: a Go process makes its few runtime threads early, so a
// second pass nearly always finds nothing new.
const maxApplyPasses = 8

// setThreads sets each of tids to s.
func (s Set) setThreads(tids []int) error {
	var errs []error
	for _, tid := range tids {
		// ESRCH: the thread has exited since the listing.
		if err := unix.SchedSetaffinity(tid, &s.cpus); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("sched_setaffinity %d: %w", tid, err))
		}
	}
	return errors.Join(errs...)
}

// Count is the number of CPUs in s.
func (s Set) Count() int { return s.cpus.Count() }

// Here returns the set of the one CPU the calling thread is running on.
func Here() (Set, error) {
	cpu, err := currentCPU()
	if err != nil {
		return Set{}, fmt.Errorf("getcpu: %w", err)
	}
	var s Set
	s.cpus.Set(cpu)
	return s, nil
}

// IsZero reports whether s holds no CPU.
func (s Set) IsZero() bool { return s.cpus.Count() == 0 }

// ApplyToThread sets the calling thread's set to s. The caller must hold runtime.LockOSThread so the
// thread that gets s is the one that goes on to fork or exec. A zero s is refused.
func (s Set) ApplyToThread() error {
	if s.IsZero() {
		return errors.New("affinity: empty CPU set")
	}
	if err := unix.SchedSetaffinity(0, &s.cpus); err != nil {
		return fmt.Errorf("sched_setaffinity %s: %w", s, err)
	}
	return nil
}

// Equal reports whether s and t hold the same CPUs.
func (s Set) Equal(t Set) bool { return s.cpus == t.cpus }

// String lists the CPUs as the kernel's Cpus_allowed_list does ("0-3,8").
func (s Set) String() string {
	var b strings.Builder
	n := len(s.cpus) * 64
	for i := 0; i < n; i++ {
		if !s.cpus.IsSet(i) {
			continue
		}
		j := i
		for j+1 < n && s.cpus.IsSet(j+1) {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(j))
		}
		i = j
	}
	return b.String()
}

// currentCPU is getcpu(2), which x/sys/unix does not wrap.
func currentCPU() (int, error) {
	var cpu uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return 0, e
	}
	return int(cpu), nil
}

// threads lists this process's thread ids from /proc/self/task with getdents(2) on a blocking descriptor
// (os.ReadDir would start the runtime's network poller, see internal/sysfile).
func threads() ([]int, error) {
	fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /proc/self/task: %w", err)
	}
	defer unix.Close(fd)
	var tids []int
	buf := make([]byte, 4096)
	for {
		n, err := linux.Retry(func() (int, error) { return unix.Getdents(fd, buf) })
		if err != nil {
			return nil, fmt.Errorf("read /proc/self/task: %w", err)
		}
		if n <= 0 {
			return tids, nil
		}
		var names []string
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
		for _, name := range names {
			if tid, err := strconv.Atoi(name); err == nil {
				tids = append(tids, tid)
			}
		}
	}
}

// Parse reads a list as String writes it ("0-3,8"); "" is the zero Set.
func Parse(list string) (Set, error) {
	var s Set
	if list == "" {
		return s, nil
	}
	limit := len(s.cpus) * 64
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= limit {
			return Set{}, fmt.Errorf("affinity: bad CPU list %q", list)
		}
		for c := a; c <= b; c++ {
			s.cpus.Set(c)
		}
	}
	return s, nil
}

// MarshalText writes s as String does, so a Set travels in JSON as "0-3,8".
func (s Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (s *Set) UnmarshalText(b []byte) error {
	t, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = t
	return nil
}
