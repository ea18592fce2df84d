//go:build guest

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The shipped system units on a production-shaped host: the sidecar runs as root under
// contrib/systemd/system exactly as shipped (only the paths are the test's), and a profile's owner - a
// hermes user whose home it is, or that home's own hostile worker - gets nothing through it that the
// owner does not have. Both kinds of worker of one profile run side by side: each runs as the home's
// owner with no supplementary group, cannot leave its scope, and a spec naming root ("user": "0:0") is
// refused, because the shipped unit does not pass --allow-as. Neither worker may run as root, and the
// unsandboxed one may not write itself out of its scope.
func TestGuestSystemSidecarUnitDropsToOwner(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	owner, ogid := throwawayUser(t)
	home := filepath.Join(e.Root, "profiles", "b")
	must(t, filepath.WalkDir(home, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, owner, ogid)
	}))
	// What the owner (or its worker) writes into its .env chooses nothing for anyone but the owner.
	must(t, os.WriteFile(filepath.Join(home, ".env"), []byte("B_MARKER=b\nGIT_CONFIG_COUNT=1\nGIT_CONFIG_KEY_0=core.pager\nGIT_CONFIG_VALUE_0=true\n"), 0o600))
	must(t, os.Lchown(filepath.Join(home, ".env"), owner, ogid))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name := "hlaunch-sidecar-t" + randHex(4)
	sockDir := "/run/" + name
	sock := sockDir + "/sidecar.sock"
	unitDir := "/run/systemd/system"
	systemctl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput()
		return string(out), err
	}
	var units []string // the workers' scopes, stopped at the end whatever happened
	t.Cleanup(func() {
		_, _ = systemctl(append([]string{"stop", name + ".socket", name + ".service"}, units...)...)
		os.Remove(filepath.Join(unitDir, name+".socket"))
		os.Remove(filepath.Join(unitDir, name+".service"))
		_, _ = systemctl("daemon-reload")
		_, _ = systemctl("reset-failed", name+".service")
		os.RemoveAll(sockDir)
	})
	edits := map[string][][2]string{
		".socket": {{"/run/hlaunch/sidecar.sock", sock}},
		".service": {
			{"/usr/local/bin/hlaunch --root /var/lib/hermes/.hermes --state-dir /var/lib/hlaunch",
				fmt.Sprintf("%s --root %s --state-dir %s", hlaunchBin, e.Root, e.State)},
			{"/run/hlaunch/sidecar.sock", sock},
			{"hlaunch-sidecar.socket", name + ".socket"},
			{"StateDirectory=hlaunch", "StateDirectory=" + name},
		},
	}
	for _, suffix := range []string{".socket", ".service"} {
		b, err := os.ReadFile(filepath.Join("..", "contrib", "systemd", "system", "hlaunch-sidecar"+suffix))
		must(t, err)
		unit := string(b)
		for _, r := range edits[suffix] {
			if !strings.Contains(unit, r[0]) {
				t.Fatalf("the shipped hlaunch-sidecar%s no longer holds %q: update this test", suffix, r[0])
			}
			unit = strings.ReplaceAll(unit, r[0], r[1])
		}
		must(t, os.WriteFile(filepath.Join(unitDir, name+suffix), []byte(unit), 0o644))
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join("/var/lib", name)) })
	if out, err := systemctl("daemon-reload"); err != nil {
		t.Fatalf("daemon-reload: %v %s", err, out)
	}
	if out, err := systemctl("start", name+".socket"); err != nil {
		t.Fatalf("start %s.socket: %v %s", name, err, out)
	}
	p := &scProc{t: t, e: e, sock: sock, client: scUnixClient(sock)}
	t.Cleanup(p.client.CloseIdleConnections)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, _ := p.do("GET", "/v1/health", ""); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			out, _ := systemctl("status", name+".service")
			t.Fatalf("the shipped units never answered:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Each worker writes what it is into a file of the owner's, then tries to leave its scope.
	probe := `out=$1; { id -u; id -g; id -G; if echo $$ 2>/dev/null >/sys/fs/cgroup/cgroup.procs; then echo escaped; else echo stayed; fi; } >"$out"`
	spawn := func(sandbox bool, out string) receipt {
		spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": sandbox,
			"argv": []string{"sh", "-c", probe, "probe", out}})
		var rc receipt
		p.mustDo("POST", "/v1/workers", string(spec), 201, &rc)
		units = append(units, rc.Unit)
		return rc
	}
	outs := map[bool]string{false: filepath.Join(home, "workspace", "plain.out"), true: filepath.Join(home, "workspace", "sandboxed.out")}
	rcs := map[bool]receipt{}
	for _, sandbox := range []bool{false, true} {
		rcs[sandbox] = spawn(sandbox, outs[sandbox])
	}
	want := fmt.Sprintf("%d\n%d\n%d\nstayed", owner, ogid, ogid)
	for _, sandbox := range []bool{false, true} {
		rc := rcs[sandbox]
		if rc.Mode != "scoped" {
			t.Fatalf("sandbox %v: mode %q, want a scope of the system manager (the unit's --scope systemd)", sandbox, rc.Mode)
		}
		st, b := p.do("GET", "/v1/workers/"+rc.ID+"/wait?timeout=60s", "")
		if st != 200 {
			t.Fatalf("sandbox %v: wait: %d %s", sandbox, st, b)
		}
		got, err := os.ReadFile(outs[sandbox])
		must(t, err)
		if strings.TrimSpace(string(got)) != want {
			t.Errorf("sandbox %v: the worker of the root sidecar is\n%s\nwant uid, gid, groups of the home's owner and no way out of its scope:\n%s", sandbox, got, want)
		}
	}

	// root, asked for by a peer: refused, because the shipped unit does not let a caller choose the uid.
	for _, sandbox := range []bool{false, true} {
		spec, _ := json.Marshal(map[string]any{"profile": "b", "sandbox": sandbox, "user": "0:0", "argv": []string{"true"}})
		st, b := p.do("POST", "/v1/workers", string(spec))
		if st == 201 {
			var rc receipt
			_ = json.Unmarshal(b, &rc)
			units = append(units, rc.Unit)
		}
		if st != 400 || !strings.Contains(string(b), "user") {
			t.Errorf("sandbox %v, user 0:0 through the shipped unit: %d %s, want 400 naming the field user", sandbox, st, b)
		}
	}
}
