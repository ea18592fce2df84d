package integration

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// A root launcher's unsandboxed worker runs as its home's owner; its HOME, USER and LOGNAME (and
// HERMES_REAL_HOME, the OS home) are that owner's account, not the launcher's: root's /root is of no use to
// it (0700), and tools that read ~/.gitconfig or cache under ~ fail there. An owner without a passwd
// entry gets the profile's home/ as HOME and no USER or LOGNAME, never HOME=/root, USER=root.
func TestPrivilegeDroppedWorkerHome(t *testing.T) {
	requireRoot(t)
	e := newEnv(t)
	owner, ogid := throwawayUser(t)
	u, err := user.LookupId(itoa(owner))
	must(t, err)
	home := filepath.Join(e.Root, "profiles", "b")
	must(t, filepath.WalkDir(home, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, owner, ogid)
	}))
	rep, _ := e.report([]string{"-p", "b", "--scope", "none"})
	if rep.UID != owner || rep.Env["HOME"] != u.HomeDir || rep.Env["USER"] != u.Username ||
		rep.Env["LOGNAME"] != u.Username || rep.Env["HERMES_REAL_HOME"] != u.HomeDir {
		t.Errorf("worker of %s's home: uid %d HOME %q USER %q LOGNAME %q HERMES_REAL_HOME %q; want the owner's account (%s, %s)",
			u.Username, rep.UID, rep.Env["HOME"], rep.Env["USER"], rep.Env["LOGNAME"], rep.Env["HERMES_REAL_HOME"], u.HomeDir, u.Username)
	}
	// An owner without a passwd entry (profile c's, a bare uid): HOME is the profile's home/ (hermes'
	// child HOME), and nothing names root's account.
	cHome := e.profile("c", "C_MARKER=c\n")
	rep, _ = e.report([]string{"-p", "c", "--scope", "none"})
	if rep.Env["HOME"] != filepath.Join(cHome, "home") {
		t.Errorf("worker of a bare uid's home: HOME %q, want %s", rep.Env["HOME"], filepath.Join(cHome, "home"))
	}
	for _, name := range []string{"USER", "LOGNAME", "HERMES_REAL_HOME"} {
		if v, ok := rep.Env[name]; ok {
			t.Errorf("worker of a bare uid's home: %s=%q, want it unset (no account to name)", name, v)
		}
	}
	// Root's own worker (a root-owned home) keeps the launcher's, as an argv prefix does.
	r := rootHomeEnv(t)
	if res := r.run("exec", "-p", "b", "--scope", "none", "--", "sh", "-c", "echo $HOME"); res.Code != 0 || strings.TrimSpace(res.Stdout) != "/root" {
		t.Errorf("root's own worker: exit %d HOME %q (%s), want the launcher's /root", res.Code, res.Stdout, res.Stderr)
	}
}
