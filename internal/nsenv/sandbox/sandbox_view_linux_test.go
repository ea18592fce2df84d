package sandbox

import (
	"bytes"
	"encoding/json"
	"github.com/hlaunch/hlaunch/internal/landlock"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hlaunch/hlaunch/internal/testutil"
)

const nobody = 65534

func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "the test builds namespaces and plays an unprivileged launcher with setuid")
}

// fixture is a hermes root with profiles a and b, a state directory with a listening sidecar socket,
// a cwd under the host's /tmp, an --rw directory, and a host process the sandbox must not reach.
type fixture struct {
	base, root, a, b, cwd, rw, state, sock, sockFile, bin string
	hostPid                                               int
	marker                                                string
}

func newFixture(t *testing.T, owner int, dir string) *fixture {
	t.Helper()
	base, err := os.MkdirTemp(dir, "hlaunch-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	cwd, err := os.MkdirTemp("/tmp", "hlaunch-sbx-cwd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cwd) })
	f := &fixture{base: base, root: filepath.Join(base, "root"), cwd: cwd, rw: filepath.Join(base, "rw"),
		state: filepath.Join(base, "state"), sockFile: filepath.Join(base, "direct.sock"),
		marker: "hlaunch-probe-" + strconv.Itoa(os.Getpid())}
	f.a, f.b = filepath.Join(f.root, "profiles", "a"), filepath.Join(f.root, "profiles", "b")
	f.sock = filepath.Join(f.state, "sidecar.sock")
	files := map[string]string{
		// World-readable on purpose: only the sandbox's view may keep them out of reach.
		filepath.Join(f.root, ".env"):      "ROOT_MARKER=root\n",
		filepath.Join(f.root, "auth.json"): "{}",
		filepath.Join(f.root, "state.db"):  "root-db",
		filepath.Join(f.a, ".env"):         "A_MARKER=a\nFIRECRAWL_API_KEY=a-fc\n",
		filepath.Join(f.a, "state.db"):     "a-db",
		filepath.Join(f.b, ".env"):         "B_MARKER=b\n",
		filepath.Join(f.state, "rec.json"): "{}",
	}
	for p, c := range files {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(c), 0o644))
	}
	for _, d := range []string{filepath.Join(f.b, "workspace"), f.rw} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.Chmod(base, 0o755))
	must(t, os.Chmod(cwd, 0o755))
	// A worker of b planting links to a's secrets, absolute and relative.
	must(t, os.Symlink(filepath.Join(f.a, ".env"), filepath.Join(f.b, "link-abs")))
	must(t, os.Symlink("../a/.env", filepath.Join(f.b, "link-rel")))
	// Device nodes outside /dev (a copy of /dev/null, c 1:3), one planted in b's home: nodev must hold.
	for _, p := range []string{filepath.Join(base, "devnode"), filepath.Join(f.b, "devnode")} {
		must(t, unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	}
	for _, p := range []string{f.b, f.cwd, f.rw} {
		must(t, filepath.Walk(p, func(q string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(q, owner, owner)
		}))
	}
	for _, s := range []string{f.sock, f.sockFile} {
		l, err := net.Listen("unix", s)
		must(t, err)
		t.Cleanup(func() { l.Close() })
		must(t, os.Chmod(s, 0o777))
	}
	sleep := exec.Command("sleep", "60")
	must(t, sleep.Start())
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	f.hostPid = sleep.Process.Pid
	// A copy of the test binary an unprivileged launcher can execute (go test's own dir is 0700).
	exe, err := os.Executable()
	must(t, err)
	f.bin = filepath.Join(base, "nsenv.test")
	src, err := os.Open(exe)
	must(t, err)
	defer src.Close()
	dst, err := os.OpenFile(f.bin, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	must(t, dst.Close())
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) probe() probe {
	return probe{
		List: []string{f.root, filepath.Join(f.root, "profiles"), f.state},
		Open: []string{filepath.Join(f.a, ".env"), filepath.Join(f.a, "state.db"), filepath.Join(f.root, ".env"),
			filepath.Join(f.root, "state.db"), filepath.Join(f.root, "auth.json"), filepath.Join(f.b, ".env"),
			filepath.Join(f.b, "link-abs"), filepath.Join(f.b, "link-rel"), "/dev/null", "/dev/urandom", "/dev/kmsg",
			filepath.Join(f.base, "devnode"), filepath.Join(f.b, "devnode")},
		Write: []string{"/", "/etc", "/usr", f.base, f.root, filepath.Join(f.root, "profiles"), f.b,
			filepath.Join(f.b, "workspace"), "/tmp", "/dev/shm", f.cwd, f.rw},
		Connect: []string{f.sock, f.sockFile},
		Kill:    f.hostPid,
		Marker:  f.marker,
	}
}

// targetEnv is the clean environ the launcher composed for the target.
func targetEnv(home string, p probe) []string {
	b, _ := json.Marshal(p)
	return []string{"HERMES_HOME=" + home, "PATH=/usr/bin:/bin", envReport + "=" + string(b)}
}

// run starts the sandbox as the launcher would and returns the reporter's view. asUser >= 0 plays an
// unprivileged launcher with that uid (user namespace); otherwise the test process (root) launches.
func (f *fixture) run(t *testing.T, sb Spec, asUser int) report {
	t.Helper()
	must(t, sb.Validate())
	// As the launcher decides it (internal/view/sandbox.go): the Landlock scopes wherever the kernel has them;
	// the guest lane's kernel (6.1) has none.
	sb.Unscoped = sb.Unscoped || landlock.Supported() != nil
	t.Setenv("HLAUNCH_TEST_LAUNCHER_SECRET", "launcher-secret") // in the launcher's env, never in the child's
	spec, _ := json.Marshal(sb)
	env, _ := json.Marshal(targetEnv(sb.Home, f.probe()))
	cmd := exec.Command(f.bin)
	cmd.Env = append(os.Environ(), envChild+"="+string(spec), envTargetEnv+"="+string(env))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if asUser >= 0 {
		cmd.Env = append(cmd.Env, envLauncher+"=1")
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(asUser), Gid: uint32(asUser), Groups: []uint32{}}
	} else {
		sb.SysProcAttr(cmd.SysProcAttr)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if strings.HasPrefix(out.String(), "NOUSERNS:") {
		t.Skipf("unprivileged user namespaces unavailable: %s", out.String())
	}
	if err != nil {
		t.Fatalf("sandboxed child: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("report: %v\n%s\nstderr: %s", err, out.String(), errb.String())
	}
	return r
}

// checkCommon asserts what every sandbox must show, whatever the profile and the user.
func (f *fixture) checkCommon(t *testing.T, r report, env []string, sb Spec) {
	t.Helper()
	if r.Pid != 1 || !slices.Equal(r.Procs, []string{"1"}) {
		t.Errorf("pid %d, /proc holds %v: want only the sandbox (pid 1)", r.Pid, r.Procs)
	}
	if r.Kill != "ESRCH" {
		t.Errorf("kill(host pid %d, 0) = %s, want ESRCH", f.hostPid, r.Kill)
	}
	if !slices.Equal(r.Environ1, env) {
		t.Errorf("/proc/1/environ = %q, want exactly %q", r.Environ1, env)
	}
	for _, e := range r.Environ1 {
		if strings.Contains(e, "launcher-secret") || strings.HasPrefix(e, envChild) {
			t.Errorf("launcher's environment leaked into /proc/1/environ: %q", e)
		}
	}
	for _, d := range []string{"/", "/etc", "/usr", f.base} {
		// Under /tmp the write lands in the private /tmp: allowed, and checked below not to reach the host.
		if slices.Contains(sb.RW, d) || pathUnder(d, "/tmp") {
			continue
		}
		if r.Write[d] == "ok" {
			t.Errorf("write into %s succeeded", d)
		}
	}
	for _, d := range []string{"/tmp", "/dev/shm", f.cwd, f.rw} {
		if r.Write[d] != "ok" {
			t.Errorf("write into %s: %s, want ok", d, r.Write[d])
		}
	}
	for _, d := range []string{"/dev/null", "/dev/urandom"} {
		if r.Open[d] != "ok" {
			t.Errorf("open %s: %s, want ok", d, r.Open[d])
		}
	}
	for _, d := range []string{"/dev/kmsg", filepath.Join(f.base, "devnode"), filepath.Join(f.b, "devnode")} {
		if r.Open[d] == "ok" {
			t.Errorf("device node %s opened: want nodev", d)
		}
	}
	if d := filepath.Join(f.base, "devnode"); r.Open[d] != "EACCES" && !pathUnder(d, "/tmp") {
		t.Errorf("open %s: %s, want EACCES (nodev)", d, r.Open[d])
	}
	for _, s := range []string{f.sock, f.sockFile} {
		if r.Connect[s] == "ok" {
			t.Errorf("hidden socket %s reachable", s)
		}
	}
	if len(r.List[f.state]) != 0 {
		t.Errorf("hidden state dir shows %v", r.List[f.state])
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if r.Status[k] != "0000000000000000" {
			t.Errorf("%s = %q, want empty", k, r.Status[k])
		}
	}
	if r.LoopOK != "ok" {
		t.Errorf("localhost listen+dial: %s", r.LoopOK)
	}
	if r.Status["NoNewPrivs"] != "1" || r.Core != 0 || r.Hostname != Hostname {
		t.Errorf("NoNewPrivs %q, RLIMIT_CORE %d, hostname %q", r.Status["NoNewPrivs"], r.Core, r.Hostname)
	}
	// On the host: the writable paths received the files, the protected ones did not.
	for _, d := range []string{f.cwd, f.rw} {
		if _, err := os.Stat(filepath.Join(d, f.marker)); err != nil {
			t.Errorf("write in %s did not reach the host: %v", d, err)
		}
	}
	for _, d := range []string{"/", "/etc", "/usr", "/tmp", f.base} {
		if slices.Contains(sb.RW, d) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(d, f.marker)); err == nil {
			os.Remove(filepath.Join(d, f.marker))
			t.Errorf("sandbox wrote %s on the host", filepath.Join(d, f.marker))
		}
	}
}

// checkNamed asserts the view of a named target (b): only b under the root, b writable, a unreachable.
func (f *fixture) checkNamed(t *testing.T, r report) {
	t.Helper()
	if got := r.List[filepath.Join(f.root, "profiles")]; !slices.Equal(got, []string{"b"}) {
		t.Errorf("ls profiles = %v, want [b]", got)
	}
	if got := r.List[f.root]; !slices.Equal(got, []string{"profiles"}) {
		t.Errorf("ls root = %v, want [profiles] (the root's own files hidden)", got)
	}
	for _, p := range []string{filepath.Join(f.a, ".env"), filepath.Join(f.a, "state.db"), filepath.Join(f.root, ".env"),
		filepath.Join(f.root, "state.db"), filepath.Join(f.root, "auth.json"), filepath.Join(f.b, "link-abs"),
		filepath.Join(f.b, "link-rel")} {
		if r.Open[p] != "ENOENT" {
			t.Errorf("open %s: %s, want ENOENT", p, r.Open[p])
		}
	}
	if r.Open[filepath.Join(f.b, ".env")] != "ok" {
		t.Errorf("open own .env: %s", r.Open[filepath.Join(f.b, ".env")])
	}
	for _, d := range []string{f.b, filepath.Join(f.b, "workspace")} {
		if r.Write[d] != "ok" {
			t.Errorf("write into home %s: %s", d, r.Write[d])
		} else if _, err := os.Stat(filepath.Join(d, f.marker)); err != nil {
			t.Errorf("home write did not reach the host: %v", err)
		}
	}
	for _, d := range []string{f.root, filepath.Join(f.root, "profiles")} {
		if r.Write[d] == "ok" {
			t.Errorf("write into %s succeeded", d)
		}
		if _, err := os.Lstat(filepath.Join(d, f.marker)); err == nil {
			t.Errorf("sandbox wrote %s on the host", filepath.Join(d, f.marker))
		}
	}
}

func mountinfo(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	must(t, err)
	return string(b)
}

func TestSandboxView(t *testing.T) {
	requireRoot(t)
	before := mountinfo(t)
	t.Cleanup(func() {
		if after := mountinfo(t); after != before {
			t.Errorf("the host's mount table changed:\n%s\n---\n%s", before, after)
		}
	})
	cases := []struct {
		name    string
		owner   int // owner of home, cwd, rw
		asUser  int // -1: root launcher
		setUser bool
		net     string
		dflt    bool
		under   string // where the hermes root lives; "" is /opt (the host's read-only rest: /var/tmp is private too)
	}{
		{name: "root launcher, named profile", owner: 0, asUser: -1},
		{name: "root launcher, --user nobody, net none", owner: nobody, asUser: -1, setUser: true, net: NetNone},
		{name: "root launcher, default profile", owner: 0, asUser: -1, dflt: true},
		{name: "unprivileged launcher, user namespace", owner: nobody, asUser: nobody},
		// Under the host's /tmp, which the private /tmp covers: the view re-creates the paths.
		{name: "root launcher, hermes root under /tmp", owner: 0, asUser: -1, under: "/tmp"},
		{name: "root launcher, default profile under /tmp", owner: 0, asUser: -1, under: "/tmp", dflt: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			under := c.under
			if under == "" {
				under = "/opt"
			}
			f := newFixture(t, c.owner, under)
			sb := Spec{Root: f.root, Home: f.b, Cwd: f.cwd, RW: []string{f.rw}, Hide: []string{f.state, f.sockFile},
				Net: c.net, SetUser: c.setUser, UID: nobody, GID: nobody}
			if c.dflt {
				sb.Home = f.root
				must(t, os.Chown(f.root, c.owner, c.owner))
			}
			r := f.run(t, sb, c.asUser)
			f.checkCommon(t, r, targetEnv(sb.Home, f.probe()), sb)
			wantUID := 0
			if c.setUser {
				wantUID = nobody
			}
			if r.Uid != wantUID {
				t.Errorf("uid %d, want %d", r.Uid, wantUID)
			}
			inUserNS := r.UIDMap != "0 0 4294967295"
			if wantNS := c.asUser >= 0; inUserNS != wantNS || (wantNS && r.UIDMap != "0 65534 1") {
				t.Errorf("uid_map %q: user namespace %v, want %v", r.UIDMap, inUserNS, wantNS)
			}
			t.Logf("dumpable after execve: %d (PR_SET_DUMPABLE 0 does not survive execve)", r.Dumpable)
			if c.net == NetNone && !slices.Equal(r.Ifaces, []string{"lo"}) {
				t.Errorf("net none: interfaces %v, want [lo]", r.Ifaces)
			}
			if !c.dflt {
				f.checkNamed(t, r)
				return
			}
			profiles := filepath.Join(f.root, "profiles")
			if len(r.List[profiles]) != 0 || r.Open[filepath.Join(f.a, ".env")] != "ENOENT" {
				t.Errorf("default profile: profiles shows %v, a/.env %s", r.List[profiles], r.Open[filepath.Join(f.a, ".env")])
			}
			if r.Open[filepath.Join(f.root, ".env")] != "ok" || r.Write[f.root] != "ok" || r.Write[profiles] == "ok" {
				t.Errorf("default profile: open .env %s, write root %s, write profiles %s",
					r.Open[filepath.Join(f.root, ".env")], r.Write[f.root], r.Write[profiles])
			}
		})
	}
}
