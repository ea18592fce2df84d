package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unitFile is one parsed unit: every directive's values, in order.
type unitFile map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unitFile{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: not a directive: %q", path, line)
		}
		u[k] = append(u[k], v)
	}
	return u
}

// words splits every value of a directive into unit names.
func (u unitFile) words(key string) map[string]bool {
	out := map[string]bool{}
	for _, v := range u[key] {
		for _, w := range strings.Fields(v) {
			out[w] = true
		}
	}
	return out
}

// The shipped units must not change the workers behind an operator's back: every process-level setting of
// the service is inherited by every worker it forks before the worker is placed (NoNewPrivileges=yes breaks
// sudo in workers, ProtectSystem=full makes /usr read-only for them). They order only after what they pull
// in, run the --warm the README recommends, name a working directory, and point at documentation that
// make install installs.
func TestUnitsDoNotLeakIntoWorkers(t *testing.T) {
	leaking := []string{"NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
		"ReadOnlyPaths", "InaccessiblePaths", "ReadWritePaths", "SystemCallFilter", "SystemCallArchitectures",
		"CapabilityBoundingSet", "AmbientCapabilities", "RestrictNamespaces", "MemoryDenyWriteExecute",
		"RestrictAddressFamilies", "LockPersonality", "RestrictSUIDSGID", "ProtectKernelTunables",
		"ProtectKernelModules", "ProtectControlGroups", "ProtectClock", "ProtectHostname", "PrivateUsers",
		"DynamicUser", "Environment", "EnvironmentFile", "Delegate"}
	services, _ := filepath.Glob("../../contrib/systemd/*/*.service")
	sockets, _ := filepath.Glob("../../contrib/systemd/*/*.socket")
	if len(services) != 2 || len(sockets) != 2 {
		t.Fatalf("units: %v %v, want a system and a user service and socket", services, sockets)
	}
	for _, p := range append(services, sockets...) {
		u := readUnit(t, p)
		for _, k := range leaking {
			if _, ok := u[k]; ok {
				t.Errorf("%s: %s= is inherited by every worker (see the unit's comment)", p, k)
			}
		}
		pulled := u.words("Wants")
		for w := range u.words("Requires") {
			pulled[w] = true
		}
		for after := range u.words("After") {
			if !pulled[after] {
				t.Errorf("%s: After=%s without Wants= or Requires= of it", p, after)
			}
		}
		docs := u.words("Documentation")
		if !docs["man:hlaunch-sidecar(1)"] || !docs["file:///usr/local/share/doc/hlaunch/sidecar.md"] {
			t.Errorf("%s: Documentation=%v, want man:hlaunch-sidecar(1) and the installed sidecar.md", p, u["Documentation"])
		}
	}
	for _, p := range services {
		u := readUnit(t, p)
		if exec := strings.Join(u["ExecStart"], " "); !strings.Contains(exec, " --warm ") {
			t.Errorf("%s: ExecStart without --warm: %s", p, exec)
		}
		if len(u["WorkingDirectory"]) != 1 {
			t.Errorf("%s: no WorkingDirectory= (a user service would start workers in the user's home)", p)
		}
	}
	if _, err := os.Stat("../../docs/sidecar.md"); err != nil {
		t.Errorf("the units' documentation: %v", err)
	}
}
