// Package mountinfo parses /proc/<pid>/mountinfo (proc(5)): one Entry per mount, in the kernel's order
// (a later mount may hide an earlier one at or above its mount point). cgroup reads the hierarchies'
// mount points from it, internal/nsenv/sandbox the mounts that show the hermes root a second time.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Entry is one line of mountinfo.
type Entry struct {
	// Major and Minor are the device of the file system (st_dev of its files).
	Major, Minor uint32
	// Root is the directory of the file system that is mounted, "/" for the whole of it (a bind mount of
	// a subdirectory shows that subdirectory).
	Root string
	// MountPoint is where it is mounted, in this mount namespace.
	MountPoint string
	// FSType and SuperOpts are the file system's type and super-block options.
	FSType, SuperOpts string
}

// Parse reads mountinfo text. Lines it cannot read are skipped; a read error is returned.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	// 4 KiB to start (a mountinfo line rarely needs more), up to 1 MiB for the longest: a larger start
	// buffer would be allocated, zeroed and page-faulted in every short-lived hlaunch process.
	sc.Buffer(make([]byte, 0, 4096), 1024*1024)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf := strings.Fields(left)
		rf := strings.Fields(right)
		if len(lf) < 5 || len(rf) < 1 {
			continue
		}
		e := Entry{Root: Unescape(lf[3]), MountPoint: Unescape(lf[4]), FSType: rf[0]}
		if maj, min, ok := strings.Cut(lf[2], ":"); ok {
			a, errA := strconv.ParseUint(maj, 10, 32)
			b, errB := strconv.ParseUint(min, 10, 32)
			if errA == nil && errB == nil {
				e.Major, e.Minor = uint32(a), uint32(b)
			}
		}
		if len(rf) >= 3 {
			e.SuperOpts = rf[2]
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	return out, nil
}

// Unescape undoes mountinfo's octal escapes (\040 for space, \011, \012, \134).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 || s[0] > '3' {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
