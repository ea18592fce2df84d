package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hlaunch/hlaunch/internal/sidecar/events"
	"github.com/hlaunch/hlaunch/internal/testutil"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMain lets the test binary stand in for a client of another uid (see TestPeerCredentials).
func TestMain(m *testing.M) {
	if sock := os.Getenv("HLAUNCH_SIDECAR_TEST_CLIENT"); sock != "" {
		os.Exit(peerClientMain(sock))
	}
	os.Exit(testutil.RunWithLeakCheck(m))
}

// peerClientMain does GET /v1/health on sock and prints "<status> <error code>"; it exits 0 unless the
// connection itself failed.
func peerClientMain(sock string) int {
	c := unixClient(sock)
	resp, err := c.Get("http://sidecar/v1/health")
	if err != nil {
		fmt.Println("dial-error", err)
		return 1
	}
	defer resp.Body.Close()
	var eb errorBody
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &eb)
	fmt.Println(resp.StatusCode, eb.Error.Code)
	return 0
}

func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "runs a client under other uids and gids")
}

func TestSocketModes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group string
		mode  os.FileMode
	}{
		{"owner only", "", 0o600},
		{"with group", fmt.Sprint(os.Getegid()), 0o660},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startTest(t, newFake(), Config{SocketGroup: tc.group})
			fi, err := os.Lstat(ts.path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != tc.mode {
				t.Fatalf("socket mode %v, want socket %v", fi.Mode(), tc.mode)
			}
			if st := fi.Sys().(*syscall.Stat_t); tc.group != "" && fmt.Sprint(st.Gid) != tc.group {
				t.Fatalf("socket gid %d, want %s", st.Gid, tc.group)
			}
			// No temporary bind directory is left next to the socket.
			ents, _ := os.ReadDir(filepath.Dir(ts.path))
			if len(ents) != 1 {
				t.Fatalf("socket directory holds %d entries, want only the socket", len(ents))
			}
		})
	}
}

func TestSocketPathRules(t *testing.T) {
	dir := shortTempDir(t)

	// A live server on the path is never displaced.
	live := startTest(t, newFake(), Config{Socket: filepath.Join(dir, "live.sock")})
	s2, _ := newServer(Config{Socket: live.path, NoActivation: true, Log: io.Discard}, newFake())
	if err := s2.Serve(context.Background()); !errors.Is(err, ErrInUse) {
		t.Fatalf("second server on a live socket: %v, want ErrInUse", err)
	}
	if st, _ := live.do(t, "GET", "/v1/health", "", nil); st != 200 {
		t.Fatalf("the first server stopped answering: %d", st)
	}

	// A regular file is never replaced.
	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, _ := newServer(Config{Socket: file, NoActivation: true, Log: io.Discard}, newFake())
	if err := s3.Serve(context.Background()); !errors.Is(err, ErrNotSocket) {
		t.Fatalf("server on a regular file: %v, want ErrNotSocket", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("the regular file was touched")
	}

	// A stale socket (its server died without cleanup, e.g. SIGKILL) is replaced.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	ts := startTest(t, newFake(), Config{Socket: stale})
	if st, _ := ts.do(t, "GET", "/v1/health", "", nil); st != 200 {
		t.Fatalf("server over a stale socket: %d", st)
	}

	// A socket that still accepts connections but where nobody answers (its listener leaked into a process
	// that is not a server) is stale too.
	mute := filepath.Join(dir, "mute.sock")
	ml, err := net.ListenUnix("unix", &net.UnixAddr{Name: mute, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ml.SetUnlinkOnClose(false)
	defer ml.Close()
	ts2 := startTest(t, newFake(), Config{Socket: mute})
	if st, _ := ts2.do(t, "GET", "/v1/health", "", nil); st != 200 {
		t.Fatalf("server over a mute socket: %d", st)
	}
}

// TestPeerCredentials connects as other uids. The socket is made world-writable on purpose, so that the
// kernel lets every client connect and the SO_PEERCRED check alone decides who is served.
func TestPeerCredentials(t *testing.T) {
	requireRoot(t)
	const group = 4242
	dir := shortTempDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ts := startTest(t, newFake(), Config{Socket: filepath.Join(dir, "s.sock"), SocketGroup: fmt.Sprint(group)})
	if err := os.Chmod(ts.path, 0o666); err != nil {
		t.Fatal(err)
	}
	es := ts.events(t, "")
	// The test binary may sit in a 0700 build directory: copy it where other uids can run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cred syscall.Credential
		want string
	}{
		{"stranger", syscall.Credential{Uid: 65534, Gid: 65534}, "403 forbidden"},
		{"primary group", syscall.Credential{Uid: 65534, Gid: group}, "200 "},
		{"supplementary group", syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{group}}, "200 "},
		{"root", syscall.Credential{Uid: 0, Gid: 0}, "200 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Env = []string{"HLAUNCH_SIDECAR_TEST_CLIENT=" + ts.path}
			cred := tc.cred
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &cred}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("client: %v: %s", err, out)
			}
			if got := string(out); got != tc.want+"\n" {
				t.Fatalf("client as %+v got %q, want %q", tc.cred, got, tc.want)
			}
			if tc.want == "403 forbidden" {
				e := es.next(t, events.Refused)
				if e.UID == nil || *e.UID != 65534 || e.PeerPID == 0 || e.Reason == "" {
					t.Fatalf("refused event %+v, want uid 65534 with pid and reason", e)
				}
			}
		})
	}
}
