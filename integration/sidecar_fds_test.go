package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Descriptors passed to the sidecar (SCM_RIGHTS) belong to the request they came with, not to
// the connection. On one kept-alive connection the gateway (root) first passes three descriptors - the
// write end of a pipe - with a request that takes none (a health request; a spawn whose spec fails its
// check), then asks for a "stdio": "inherit" spawn that passes none: the sidecar no longer holds the pipe
// once the first answer is in, and the second request is refused (400 invalid) as on a fresh connection;
// nothing is ever written to the pipe. A third request on the same connection that passes its own three
// descriptors is served with them. A sidecar that kept the first request's descriptors until the
// connection closed would hand them to the second spawn, whose worker would write its report into the pipe.
func TestSidecarPassedFDsBelongToTheirRequest(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	p := startSidecarProc(t, e, filepath.Join(scSocketDir(t), "s.sock"))
	inherit := `{"profile":"b","stdio":"inherit","argv":["` + selfBin + `","child","report"]}`
	for _, first := range []struct{ name, req string }{
		{"health", "GET /v1/health HTTP/1.1\r\nHost: sidecar\r\n\r\n"},
		{"invalid spawn", scPost(`{"profile":"b","argv":["true"],"colour":"red"}`)},
	} {
		t.Run(first.name, func(t *testing.T) {
			c := scDialRaw(t, p.sock)
			pr, pw, err := os.Pipe()
			must(t, err)
			defer pr.Close()
			pipe := fdTarget(t, "/proc/self/fd/"+strconv.Itoa(int(pw.Fd())))
			st, body := scRawExchange(t, c, first.req, int(pw.Fd()), int(pw.Fd()), int(pw.Fd()))
			pw.Close()
			if first.name == "health" && st != 200 || first.name != "health" && st != 400 {
				t.Fatalf("the first request: %d %s", st, body)
			}
			if n := holds(t, p.cmd.Process.Pid, pipe); n > 0 {
				t.Errorf("after the answer to the request that passed them, the sidecar still holds %d of its 3 descriptors (%s)", n, pipe)
			}
			st, body = scRawExchange(t, c, scPost(inherit))
			if st != 400 || scErrCode([]byte(body)) != "invalid" || !strings.Contains(body, "got 0") {
				t.Errorf("an inherit spawn that passed no descriptors, after a request that passed three: %d %s; want 400 invalid, \"got 0\"", st, body)
			}
			// The pipe's only writers were ours and the sidecar's: EOF at once unless a worker got it.
			if out := readWithin(t, pr, 30*time.Second); out != "" {
				t.Errorf("a later request's worker wrote into the descriptors an earlier request passed: %q", out)
			}

			// Descriptors passed with their own request are served, on the same connection.
			pr2, pw2, err := os.Pipe()
			must(t, err)
			defer pr2.Close()
			st, body = scRawExchange(t, c, scPost(inherit), int(pw2.Fd()), int(pw2.Fd()), int(pw2.Fd()))
			pw2.Close()
			if st != 201 {
				t.Fatalf("an inherit spawn that passed its own descriptors, on the same connection: %d %s", st, body)
			}
			var rep childReport
			if out := readWithin(t, pr2, 30*time.Second); json.Unmarshal([]byte(out), &rep) != nil || rep.PID == 0 {
				t.Errorf("the worker's report on the descriptors its request passed: %q", out)
			}
		})
	}
}

// scPost is a POST /v1/workers of spec, kept alive.
func scPost(spec string) string {
	return "POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(spec)) + "\r\n\r\n" + spec
}

// rawConn is one kept-alive connection to a sidecar and its reader.
type rawConn struct {
	c  *net.UnixConn
	br *bufio.Reader
}

// scDialRaw connects to the sidecar on sock; the connection is closed at the end of the test.
func scDialRaw(t *testing.T, sock string) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c.(*net.UnixConn), br: bufio.NewReader(c)}
}

// scRawExchange sends req on c, with fds (SCM_RIGHTS) on its first bytes when there are any, and returns
// the answer's status and body.
func scRawExchange(t *testing.T, c *rawConn, req string, fds ...int) (int, string) {
	t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(60 * time.Second))
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err := c.c.WriteMsgUnix([]byte(req), oob, nil)
	must(t, err)
	resp, err := http.ReadResponse(c.br, nil)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// fdTarget is what the descriptor link at path names ("pipe:[1234]").
func fdTarget(t *testing.T, path string) string {
	t.Helper()
	s, err := os.Readlink(path)
	must(t, err)
	return s
}

// holds counts the descriptors of process pid that name target.
func holds(t *testing.T, pid int, target string) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	must(t, err)
	n := 0
	for _, e := range ents {
		if s, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && s == target {
			n++
		}
	}
	return n
}

// readWithin reads f to its end; the test fails if that takes longer than d (a writer still holds it).
func readWithin(t *testing.T, f *os.File, d time.Duration) string {
	t.Helper()
	_ = f.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading the pipe: %v (after %q)", err, b)
	}
	return string(b)
}
