package sidecar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/sidecar/events"
)

// rawGet sends GET path on c and returns the answer's status, its Retry-After and its error code, or err
// when the connection was closed without an answer.
func rawGet(c net.Conn, path string) (status int, retry, code string, err error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: sidecar\r\n\r\n", path); err != nil {
		return 0, "", "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var eb errorBody
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &eb) != nil || eb.Error.Message == "" {
			return resp.StatusCode, "", "", fmt.Errorf("%d without a JSON error: %q", resp.StatusCode, b)
		}
		code = eb.Error.Code
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), code, nil
}

// closedByPeer reports whether the server closes c within d (EOF), rather than leaving it open.
func closedByPeer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF; a timeout is an error
}

// A uid over its share of connections gets 429 too_many with Retry-After and its connection closed, while
// it holds them; once one closes, it is served again. Idle connections hold their slots.
func TestConnLimitPerUID(t *testing.T) {
	ts := startTest(t, newFake(), Config{MaxConnsPerUID: 4})
	var held []net.Conn
	for range 4 {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	if st, _, _, err := rawGet(held[0], "/v1/health"); err != nil || st != 200 {
		t.Fatalf("a connection within the share: %d %v", st, err)
	}
	over, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	st, retry, code, err := rawGet(over, "/v1/health")
	if err != nil || st != http.StatusTooManyRequests || code != "too_many" || retry != "1" {
		t.Fatalf("a fifth connection: %d %q Retry-After %q (%v); want 429 too_many, Retry-After 1", st, code, retry, err)
	}
	if !closedByPeer(over, 5*time.Second) {
		t.Fatal("the connection over the limit was not closed after its answer")
	}
	held[3].Close()
	// The slot is given back when the server's side of the connection closes: it sees the EOF at once.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		st, _, _, err := rawGet(c, "/v1/health")
		c.Close()
		if err == nil && st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot after a connection closed: %d %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The last probe's slot comes back when the server sees it closed.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := ts.client.Get("http://sidecar/v1/metrics")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 429 && time.Now().Before(deadline) {
			continue
		}
		// At least the one refusal above; the retries of this loop and the one before may add theirs.
		if !regexp.MustCompile(`(?m)^hlaunch_sidecar_limited_total\{limit="conns_per_uid"\} [1-9]`).Match(m) {
			t.Errorf("the refusal is not in the metrics: %d\n%s", resp.StatusCode, m)
		}
		break
	}
}

// Past the total number of connections, a peer gets 503 busy with Retry-After.
func TestConnLimitTotal(t *testing.T) {
	ts := startTest(t, newFake(), Config{MaxConns: 2, MaxConnsPerUID: 10})
	for range 2 {
		c, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if st, _, _, err := rawGet(c, "/v1/health"); st != 200 {
			t.Fatalf("within the total: %d %v", st, err)
		}
	}
	c, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, retry, code, err := rawGet(c, "/v1/health"); st != 503 || code != "busy" || retry != "1" {
		t.Fatalf("over the total: %d %q Retry-After %q (%v); want 503 busy, Retry-After 1", st, code, retry, err)
	}
}

// A uid over its share of event streams gets 429 too_many on the next one; the streams it holds go on.
func TestStreamLimitPerUID(t *testing.T) {
	ts := startTest(t, newFake(), Config{MaxStreamsPerUID: 2})
	for range 2 {
		ts.events(t, "")
	}
	if st, code := ts.do(t, "GET", "/v1/events", "", nil); st != 429 || code != "too_many" {
		t.Fatalf("a third stream: %d %q, want 429 too_many", st, code)
	}
	if st, _ := ts.do(t, "GET", "/v1/health", "", nil); st != 200 {
		t.Fatalf("health while the streams are held: %d", st)
	}
}

// A body sent slower than BodyTimeout is answered 408 too_slow and its connection closed; the request must
// not wait for the body for as long as the client keeps the connection.
func TestSlowBody(t *testing.T) {
	ts := startTest(t, newFake(), Config{BodyTimeout: 300 * time.Millisecond})
	c, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a slow body: %d, want 408", resp.StatusCode)
	}
	if !closedByPeer(c, 5*time.Second) {
		t.Fatal("the slow body's connection was not closed")
	}
}

// Headers past maxHeaderBytes are refused (431) rather than held in memory; net/http's default let every
// connection hold a megabyte of them.
func TestHeaderBytes(t *testing.T) {
	ts := startTest(t, newFake(), Config{})
	c, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go fmt.Fprintf(c, "GET /v1/health HTTP/1.1\r\nHost: sidecar\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", 100<<10))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %d, want 431", resp.StatusCode)
	}
}

// A reader of /v1/events that stops reading is cut off: its queue fills and it is dropped from the broker
// at once (a lost event waits for it at the end of what it has not read), and the stream's handler ends
// within StreamWriteTimeout, freeing its connection and its stream slot; the sidecar's heap does not grow
// with the events published meanwhile. The handler must never stay blocked in its write.
func TestSlowEventReader(t *testing.T) {
	ts := startTest(t, newFake(), Config{StreamQueue: 16, StreamWriteTimeout: time.Second, MaxStreamsPerUID: 1})
	c, err := net.Dial("unix", ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/events HTTP/1.1\r\nHost: sidecar\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	// Never read again: publish far more than the socket's buffers and the queue hold.
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	reason := strings.Repeat("r", 1000)
	for i := range 20000 {
		ts.Server.events.Publish(events.Event{Type: events.Refused, Reason: reason, PeerPID: int32(i)})
	}
	subs := ts.Server.events.Subscribers()
	if subs != 0 {
		t.Fatalf("%d subscribers are still queued after 20000 unread events, want 0 (the slow one dropped)", subs)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// The ring holds EventRing events of about 1.2 KB each: that is all that may stay.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 32<<20 {
		t.Errorf("the heap grew by %d bytes while a reader did not read", grew)
	}
	// The stream's slot frees once its handler ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, mine := ts.streams.Counts(uint32(os.Geteuid())); mine == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow reader's stream still holds its slot 10s after it stopped reading (StreamWriteTimeout 1s)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// What the reader gets when it reads again: what fit in the buffers, then the lost event or the cut.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := io.Copy(io.Discard, resp.Body)
	if n == 0 {
		t.Error("the slow reader got nothing at all")
	}
}
