package sidecar

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Descriptors a request passes end with that request: after the answer to a health request that passed a
// pipe's write end three times the server no longer holds it (the reader sees EOF), and an inherit spawn on
// the same connection that passes none is refused as on a fresh connection. A connection that kept them
// would serve the spawn with them as its stdio.
func TestPassedFDsEndWithTheirRequest(t *testing.T) {
	ts := startTest(t, newFake(), Config{})
	nc, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := nc.(*net.UnixConn)
	br := bufio.NewReader(c)
	exchange := func(req string, fds ...int) (int, string) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		if _, _, err := c.WriteMsgUnix([]byte(req), oob, nil); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	w := int(pw.Fd())
	if st, body := exchange("GET /v1/health HTTP/1.1\r\nHost: sidecar\r\n\r\n", w, w, w); st != 200 {
		t.Fatalf("health passing three descriptors: %d %s", st, body)
	}
	pw.Close()
	_ = pr.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(pr); err != nil {
		t.Errorf("the server still holds the descriptors a finished request passed: %v", err)
	}
	spec := `{"profile":"b","stdio":"inherit","argv":["true"]}`
	st, body := exchange("POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Length: " + strconv.Itoa(len(spec)) + "\r\n\r\n" + spec)
	if st != 400 || !strings.Contains(body, "got 0") {
		t.Errorf("an inherit spawn passing none after a request that passed three: %d %s; want 400, got 0", st, body)
	}
}
