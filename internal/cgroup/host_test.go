package cgroup

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

const hybridInfo = `22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw
31 22 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
`

const unifiedInfo = `25 1 0:23 / / rw - ext4 /dev/sda1 rw
30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

const legacyInfo = `31 22 0:28 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
32 31 0:29 / /sys/fs/cgroup/systemd rw shared:9 - cgroup cgroup rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd
33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw shared:10 - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory
35 31 0:32 / /sys/fs/cgroup/freezer rw shared:12 - cgroup cgroup rw,freezer
36 31 0:33 / /sys/fs/cgroup/pids rw shared:13 - cgroup cgroup rw,pids
`

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		mode    Mode
		unified string
		v1      map[string]string
		err     error
	}{
		{name: "hybrid", in: hybridInfo, mode: Hybrid, unified: "/sys/fs/cgroup/unified", v1: map[string]string{
			"cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct", "memory": "/sys/fs/cgroup/memory",
			"freezer": "/sys/fs/cgroup/freezer", "pids": "/sys/fs/cgroup/pids", "name=systemd": "/sys/fs/cgroup/systemd"}},
		{name: "unified", in: unifiedInfo, mode: Unified, unified: "/sys/fs/cgroup"},
		{name: "legacy", in: legacyInfo, mode: Legacy, v1: map[string]string{
			"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "memory": "/sys/fs/cgroup/memory",
			"freezer": "/sys/fs/cgroup/freezer", "pids": "/sys/fs/cgroup/pids", "name=systemd": "/sys/fs/cgroup/systemd"}},
		{name: "none", in: "25 1 0:23 / / rw - ext4 /dev/sda1 rw\n", err: ErrNotFound},
		{name: "empty", in: "", err: ErrNotFound},
		{name: "garbage", in: "x\n - \n1 2 3\n", err: ErrNotFound},
		{name: "escaped mountpoint", in: "1 1 0:1 / /tmp/a\\040b rw - cgroup2 cgroup2 rw\n", mode: Unified, unified: "/tmp/a b"},
		{name: "overmounted by tmpfs", in: hybridInfo + "90 31 0:99 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n" +
			"91 90 0:98 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n", mode: Unified, unified: "/sys/fs/cgroup/unified"},
		{name: "second cgroup2 mount: first wins", in: unifiedInfo + "50 25 0:26 / /tmp/cg rw - cgroup2 cgroup2 rw\n",
			mode: Unified, unified: "/sys/fs/cgroup"},
		{name: "named only v1 with v2", in: unifiedInfo + "51 30 0:40 / /sys/fs/cgroup/x rw - cgroup cgroup rw,name=x\n",
			mode: Unified, unified: "/sys/fs/cgroup", v1: map[string]string{"name=x": "/sys/fs/cgroup/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseMountinfo(strings.NewReader(tt.in))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Mode != tt.mode || h.Unified != tt.unified || !maps.Equal(h.V1, tt.v1) {
				t.Errorf("got mode=%s unified=%q v1=%v, want %s %q %v", h.Mode, h.Unified, h.V1, tt.mode, tt.unified, tt.v1)
			}
		})
	}
}

func FuzzParseMountinfo(f *testing.F) {
	for _, s := range []string{hybridInfo, unifiedInfo, legacyInfo, "1 1 0:1 / /a\\134\\04 rw - cgroup2 x rw\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseMountinfo(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, ErrNotFound) && !strings.Contains(err.Error(), "reading mountinfo") {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		switch h.Mode {
		case Unified, Hybrid:
			if h.Unified == "" {
				t.Fatalf("mode %s without unified mount", h.Mode)
			}
		case Legacy:
			if h.Unified != "" || len(h.V1) == 0 {
				t.Fatalf("legacy with unified=%q v1=%v", h.Unified, h.V1)
			}
		default:
			t.Fatalf("bad mode %q", h.Mode)
		}
	})
}

func TestCleanParent(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: "/hlaunch"},
		{in: "hlaunch", want: "/hlaunch"},
		{in: "/hlaunch", want: "/hlaunch"},
		{in: "a/b/", want: "/a/b"},
		{in: "/a//./b", want: "/a/b"},
		{in: "..", bad: true},
		{in: "../x", bad: true},
		{in: "/../x", bad: true},
		{in: "/..", bad: true},
		{in: "a/../b", bad: true},
		{in: "a/..", bad: true},
		{in: "/", bad: true},
		{in: ".", bad: true},
		{in: "a\x00b", bad: true},
		{in: "a\nb", bad: true},
	}
	var h Host
	for _, tt := range tests {
		got, err := h.CleanParent(tt.in)
		if tt.bad {
			if !errors.Is(err, ErrBadParent) {
				t.Errorf("CleanParent(%q) = %q, %v; want ErrBadParent", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CleanParent(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzCleanParent(f *testing.F) {
	for _, s := range []string{"", "a/b", "/../x", "a/./../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := cleanParent(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "/") || p == "/" || strings.Contains(p, "..") && containsDotDot(p) {
			t.Fatalf("cleanParent(%q) = %q escapes", s, p)
		}
	})
}

func containsDotDot(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1048576", want: 1 << 20},
		{in: "512M", want: 512 << 20},
		{in: "512m", want: 512 << 20},
		{in: "1G", want: 1 << 30},
		{in: "1Gi", want: 1 << 30},
		{in: "2GB", want: 2 << 30},
		{in: "4K", want: 4096},
		{in: "1T", want: 1 << 40},
		{in: "1.5G", want: 3 << 29},
		{in: "max", want: 0},
		{in: "MAX", want: 0},
		{in: "0", want: 0},
		{in: "", bad: true},
		{in: "-1", bad: true},
		{in: "-1M", bad: true},
		{in: "M", bad: true},
		{in: "12X", bad: true},
		{in: "99999999999T", bad: true},
		{in: "1e3", bad: true},
		{in: "NaNG", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
