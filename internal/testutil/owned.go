package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/linux"
)

// A test process that is killed (a timeout, ^C, a CI runner that gives up) runs no cleanup: what it made
// outside t.TempDir - a directory in /opt or /tmp, a user - would stay for good. Such a thing carries an
// owner tag in its name, "<pid>-<start>", the PID and start time of the test process that made it, and
// the next run removes what belongs to a process that no longer runs (SweepStale). A PID alone would not
// do: a recycled PID is another process, with another start time. Two runs at once are normal, and the
// sweep never touches what a live run owns.

// OwnerTag is this process's owner tag, "<pid>-<start>" (start: field 22 of /proc/self/stat).
func OwnerTag() (string, error) {
	st, err := readStat(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("testutil: owner tag: %w", err)
	}
	return strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(st.Start, 10), nil
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (linux.Stat, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return linux.Stat{}, err
	}
	defer f.Close()
	return linux.ReadStat(f)
}

// OwnerOf parses the owner tag at the start of name after prefix (prefix "<pid>-<start>-..."); ok is false
// for a name that carries none, which is nobody's to remove.
func OwnerOf(name, prefix string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found {
		return 0, 0, false
	}
	fields := strings.SplitN(rest, "-", 3)
	if len(fields) != 3 || fields[2] == "" {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 || fields[0] != strconv.Itoa(pid) {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(fields[1], 10, 64)
	if err != nil || fields[1] != strconv.FormatUint(start, 10) {
		return 0, 0, false
	}
	return pid, start, true
}

// OwnerRuns reports whether the process pid that started at start still runs: the PID exists, is not a
// zombie, and has that start time. An error other than "no such process" counts as running: the sweep
// removes only what it knows is stale.
func OwnerRuns(pid int, start uint64) bool {
	st, err := readStat(pid)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || (st.Start == start && !st.Dead())
}

// Stale reports whether name (prefix, an owner tag, "-...") belongs to a process that no longer runs.
func Stale(name, prefix string) bool {
	pid, start, ok := OwnerOf(name, prefix)
	return ok && !OwnerRuns(pid, start)
}

// OwnedTempDir makes a new directory in base named prefix, this process's owner tag, "-" and a random
// part (os.MkdirTemp: mode 0700), for SweepStale to find if this process is killed before it removes it.
func OwnedTempDir(base, prefix string) (string, error) {
	tag, err := OwnerTag()
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(base, prefix+tag+"-")
}

// SweepStale removes each entry of base whose name is prefix with the owner tag of a process that no
// longer runs (OwnedTempDir's leftovers of a killed run), and returns what it removed. An entry of a live
// owner, one without an owner tag, and, unless this process is root, one of another uid (another user's
// run, in a shared /tmp) are left alone.
func SweepStale(base, prefix string) ([]string, error) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("testutil: sweep %s: %w", base, err)
	}
	var removed []string
	var errs []error
	for _, ent := range ents {
		if !Stale(ent.Name(), prefix) {
			continue
		}
		p := filepath.Join(base, ent.Name())
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || (os.Geteuid() != 0 && int(st.Uid) != os.Geteuid()) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("testutil: sweep: %w", err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// OwnedName is prefix, this process's owner tag, "-" and eight random hex digits: the name of a cgroup (or
// another thing outside t.TempDir) that a later run can tell is stale (Stale, SweepStaleCgroups).
func OwnedName(prefix string) (string, error) {
	tag, err := OwnerTag()
	if err != nil {
		return "", err
	}
	return RandName(prefix + tag + "-"), nil
}

// SweepStaleCgroups removes each cgroup at the root of every hierarchy whose name is prefix with the owner
// tag of a process that no longer runs (RemoveTree: its members are killed first: they are a killed run's
// workers), and returns what it removed. A live run's cgroups and names without an owner tag stay.
func SweepStaleCgroups(prefix string) ([]string, error) {
	var removed []string
	var errs []error
	for _, root := range CgroupRoots() {
		ents, err := os.ReadDir(root)
		if err != nil {
			errs = append(errs, fmt.Errorf("testutil: sweep %s: %w", root, err))
			continue
		}
		for _, ent := range ents {
			if !ent.IsDir() || !Stale(ent.Name(), prefix) {
				continue
			}
			p := filepath.Join(root, ent.Name())
			if err := RemoveTree(p); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, p)
		}
	}
	return removed, errors.Join(errs...)
}
