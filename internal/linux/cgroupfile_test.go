package linux

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ProcCgroup
		bad  bool
	}{
		{"hybrid", "9:name=systemd:/app.slice/x.scope\n4:memory:/\n3:cpu,cpuacct:/a/b\n0::/app.slice/x.scope\n",
			ProcCgroup{V2: "/app.slice/x.scope", V1: map[string]string{"name=systemd": "/app.slice/x.scope", "memory": "/", "cpu": "/a/b", "cpuacct": "/a/b"}}, false},
		{"pure v2", "0::/user.slice/w-1\n", ProcCgroup{V2: "/user.slice/w-1", V1: map[string]string{}}, false},
		{"root", "0::/\n", ProcCgroup{V2: "/", V1: map[string]string{}}, false},
		{"outside the namespace", "0::/../../x\n", ProcCgroup{V2: "/../../x", V1: map[string]string{}}, false},
		{"legacy", "2:pids:/w\n1:name=systemd:/w\n", ProcCgroup{V1: map[string]string{"pids": "/w", "name=systemd": "/w"}}, false},
		{"no final newline", "0::/a", ProcCgroup{V2: "/a", V1: map[string]string{}}, false},
		{"path with colon", "0::/a:b\n", ProcCgroup{V2: "/a:b", V1: map[string]string{}}, false},
		{"empty", "", ProcCgroup{V1: map[string]string{}}, false},
		{"relative path", "0::a\n", ProcCgroup{}, true},
		{"two fields", "0:/a\n", ProcCgroup{}, true},
		{"bad id", "x::/a\n", ProcCgroup{}, true},
		{"two v2 lines", "0::/a\n0::/b\n", ProcCgroup{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcCgroup([]byte(tt.in))
			if tt.bad {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("ParseProcCgroup = %+v, %v; want ErrMalformed", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseProcCgroup = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestParseEvents(t *testing.T) {
	tests := []struct {
		in   string
		want Events
		bad  bool
	}{
		{"populated 1\nfrozen 0\n", Events{Populated: true}, false},
		{"populated 0\nfrozen 1\n", Events{Frozen: true}, false},
		{"populated 1\n", Events{Populated: true}, false}, // before 5.2: no frozen key
		{"frozen 1\npopulated 0", Events{Frozen: true}, false},
		{"populated  1 \n", Events{Populated: true}, false},
		{"", Events{}, true},
		{"frozen 0\n", Events{}, true},
		{"populated yes\n", Events{}, true},
		{"populated 1\nfrozen 2\n", Events{}, true},
		{"populated1\n", Events{}, true},
	}
	for _, tt := range tests {
		got, err := ParseEvents([]byte(tt.in))
		if tt.bad {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("ParseEvents(%q) = %+v, %v; want ErrMalformed", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseEvents(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestKeyed(t *testing.T) {
	b := []byte("usage_usec 1200\nuser_usec 800\nnr_periods 0\noom_kill x\n")
	if v, ok, err := KeyedUint(b, "user_usec"); v != 800 || !ok || err != nil {
		t.Errorf("user_usec = %d, %v, %v", v, ok, err)
	}
	if _, ok, err := KeyedUint(b, "usage"); ok || err != nil {
		t.Errorf("a key's prefix matched: %v, %v", ok, err)
	}
	if _, ok, err := KeyedUint(b, "oom_kill"); !ok || !errors.Is(err, ErrMalformed) {
		t.Errorf("a non-numeric value: %v, %v; want found and ErrMalformed", ok, err)
	}
	if v, ok := KeyedValue(b, "nr_periods"); v != "0" || !ok {
		t.Errorf("nr_periods = %q, %v", v, ok)
	}
}

func TestFdinfoPid(t *testing.T) {
	for in, want := range map[string]int{
		"pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nPid:\t4242\nNSpid:\t4242\n": 4242,
		"Pid:\t-1\n": -1,
		"Pid:\t0\n":  0,
	} {
		if got, err := FdinfoPid([]byte(in)); err != nil || got != want {
			t.Errorf("FdinfoPid(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "pos:\t0\n", "Pid:\tx\n"} {
		if _, err := FdinfoPid([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("FdinfoPid(%q): %v, want ErrMalformed", in, err)
		}
	}
}

func FuzzParseProcCgroup(f *testing.F) {
	f.Add([]byte("9:name=systemd:/a\n0::/a\n"))
	f.Add([]byte("0::\n::\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pc, err := ParseProcCgroup(b)
		if err == nil && pc.V2 != "" && pc.V2[0] != '/' {
			t.Fatalf("v2 path %q is not absolute", pc.V2)
		}
	})
}

func FuzzParseEvents(f *testing.F) {
	f.Add([]byte("populated 1\nfrozen 0\n"))
	f.Add([]byte("populated\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseEvents(b)
		_, _ = FdinfoPid(b)
		_, _, _ = KeyedUint(b, "populated")
	})
}

func TestParseProcs(t *testing.T) {
	pids, err := ParseProcs([]byte("12\n0\n345\n"))
	if err != nil || len(pids) != 2 || pids[0] != 12 || pids[1] != 345 {
		t.Fatalf("ParseProcs: %v, %v; want [12 345] (0 is outside our PID namespace)", pids, err)
	}
	if pids, err := ParseProcs(nil); err != nil || len(pids) != 0 {
		t.Fatalf("empty: %v, %v", pids, err)
	}
	for _, bad := range []string{"12\nx\n", "-3\n"} {
		if _, err := ParseProcs([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseProcs(%q): %v, want ErrMalformed", bad, err)
		}
	}
}
