package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// floodMain is `child flood SOCK`: a socket-group user's attacks on the sidecar at SOCK, driven one command
// a line on stdin, each answered with one JSON line on stdout (floodResult). It holds what it opened until
// "drop", and ends on "quit", at the end of stdin, or after floodLife, whichever comes first: it never
// outlives its test. Commands:
//
//	idle N       open up to N connections that send nothing, and hold them
//	count        how many held connections the sidecar has closed, and how many are still open
//	share N      N connections each sending one GET /v1/health; those answered 200 are held (kept alive);
//	             one closed unanswered is tried again for up to 10 s
//	streams N    N connections each asking GET /v1/events; the answered ones are held
//	fds N        N connections each passing 200 descriptors (SCM_RIGHTS) with half a request, held
//	bigbody      a POST /v1/workers of 2 MiB
//	bigheader    a GET /v1/health with 100 KiB of headers
//	slowbody N   N POST /v1/workers whose 1000-byte bodies come a byte each 500 ms; waits until every one
//	             is answered or closed (60 s at most)
//	idem N       one spawn of profile a's /bin/true with Idempotency-Key job-N (the body redteam6IdemBody);
//	             a replayed answer counts as "201 replay"
//	list N       N connections each sending GET /v1/workers (every other one with limit=10000) and reading
//	             its answer's head and no more; held
//	drop         close every held connection
func floodMain(args []string) int {
	if len(args) != 2 {
		return 2
	}
	f := &flooder{sock: args[1]}
	go func() {
		time.Sleep(floodLife)
		os.Exit(3)
	}()
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) == 0 {
			continue
		}
		n := 0
		if len(fields) > 1 {
			n, _ = strconv.Atoi(fields[1])
		}
		if fields[0] == "quit" {
			break
		}
		_ = out.Encode(f.do(fields[0], n))
	}
	f.drop()
	return 0
}

// floodLife bounds a flooder's life whatever its test does.
const floodLife = 5 * time.Minute

// floodResult is a flooder's answer to one command.
type floodResult struct {
	Opened, DialErrors int
	Open, Closed       int
	Statuses           map[string]int // "200", "429 too_many", "closed": how each request ended
	Retry              string         // the last Retry-After seen
	MaxMillis          int64          // slowbody: the longest any took to end
	IDs                []string       // spawn: the workers started
	Tokens             []string       // idem: the tokens of the receipts answered
	Err                string
}

type flooder struct {
	sock string
	mu   sync.Mutex
	held []net.Conn
}

func (f *flooder) do(cmd string, n int) floodResult {
	r := floodResult{Statuses: map[string]int{}}
	switch cmd {
	case "idle":
		r.Opened, r.DialErrors = f.open(n, func(net.Conn) error { return nil })
	case "count":
		f.mu.Lock()
		for _, c := range f.held {
			_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
			var b [1]byte
			if _, err := c.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
				r.Open++
			} else {
				r.Closed++
			}
		}
		f.mu.Unlock()
	case "share":
		for range n {
			for deadline := time.Now().Add(10 * time.Second); ; {
				c, err := net.DialTimeout("unix", f.sock, 2*time.Second)
				if err != nil {
					r.DialErrors++
					break
				}
				st, retry := floodAnswer(c, "GET /v1/health HTTP/1.1\r\nHost: sidecar\r\n\r\n")
				if st == "200" {
					f.hold(c) // kept alive, and idle
				} else {
					c.Close()
				}
				if st != "closed" || time.Now().After(deadline) {
					r.Statuses[st]++
					if retry != "" {
						r.Retry = retry
					}
					break
				}
				time.Sleep(50 * time.Millisecond) // closed unanswered: the refusals in flight were full
			}
		}
	case "streams":
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range n {
			c, err := net.DialTimeout("unix", f.sock, 2*time.Second)
			if err != nil {
				r.DialErrors++
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, retry := floodAnswer(c, "GET /v1/events HTTP/1.1\r\nHost: sidecar\r\n\r\n")
				mu.Lock()
				defer mu.Unlock()
				r.Statuses[st]++
				if retry != "" {
					r.Retry = retry
				}
				if st == "200" {
					f.hold(c) // the stream goes on; nobody reads it
				} else {
					c.Close()
				}
			}()
		}
		wg.Wait()
	case "fds":
		null, err := os.Open(os.DevNull)
		if err != nil {
			r.Err = err.Error()
			break
		}
		defer null.Close()
		fds := make([]int, 200)
		for i := range fds {
			fds[i] = int(null.Fd())
		}
		r.Opened, r.DialErrors = f.open(n, func(c net.Conn) error {
			_, _, err := c.(*net.UnixConn).WriteMsgUnix([]byte("GET /v1/health HTTP/1.1\r\n"), unix.UnixRights(fds...), nil)
			return err
		})
	case "bigbody":
		st, _ := floodRequest(f.sock, fmt.Sprintf("POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Length: %d\r\n\r\n", 2<<20), strings.NewReader(strings.Repeat(" ", 2<<20)))
		r.Statuses[st]++
	case "bigheader":
		st, _ := floodRequest(f.sock, "GET /v1/health HTTP/1.1\r\nHost: sidecar\r\nX-Pad: "+strings.Repeat("a", 100<<10)+"\r\n\r\n", nil)
		r.Statuses[st]++
	case "slowbody":
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := time.Now()
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := &dribble{left: 1000, every: 500 * time.Millisecond}
				st, _ := floodRequest(f.sock, "POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Length: 1000\r\n\r\n", body)
				mu.Lock()
				defer mu.Unlock()
				r.Statuses[st]++
				r.MaxMillis = max(r.MaxMillis, time.Since(start).Milliseconds())
			}()
		}
		wg.Wait()
	case "spawn", "spawn-retry":
		// spawn: n spawns of a sleeping worker of profile a, each answered once; spawn-retry: each spawn
		// retried on 429 for up to 10 s, for a slot that must come free (a worker's end seen by the watcher).
		for range n {
			for deadline := time.Now().Add(10 * time.Second); ; {
				body := `{"profile":"a","argv":["/bin/sleep","300"]}`
				c, err := net.DialTimeout("unix", f.sock, 2*time.Second)
				if err != nil {
					r.DialErrors++
					break
				}
				st, retry, answer := floodExchange(c, fmt.Sprintf("POST /v1/workers HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body), true)
				c.Close()
				if cmd == "spawn-retry" && st == "429 too_many" && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				r.Statuses[st]++
				if retry != "" {
					r.Retry = retry
				}
				var rc struct{ ID string }
				if st == "201" && json.Unmarshal(answer, &rc) == nil {
					r.IDs = append(r.IDs, rc.ID)
				}
				break
			}
		}
	case "list":
		sent := 0
		r.Opened, r.DialErrors = f.open(n, func(c net.Conn) error {
			query := "" // every other one asks for the largest page
			if sent++; sent%2 == 0 {
				query = "?limit=10000"
			}
			if _, err := io.WriteString(c, "GET /v1/workers"+query+" HTTP/1.1\r\nHost: sidecar\r\n\r\n"); err != nil {
				return err
			}
			// The answer's head, then nothing more: the handler has begun its answer and waits on the rest.
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			defer c.SetReadDeadline(time.Time{})
			_, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil)
			return err
		})
	case "idem":
		body := redteam6IdemBody
		c, err := net.DialTimeout("unix", f.sock, 2*time.Second)
		if err != nil {
			r.DialErrors++
			break
		}
		st, answer, replay := floodIdem(c, fmt.Sprint("job-", n), body)
		c.Close()
		if replay {
			st += " replay"
		}
		r.Statuses[st]++
		var rc struct{ ID, Token string }
		if strings.HasPrefix(st, "201") && json.Unmarshal(answer, &rc) == nil {
			r.IDs = append(r.IDs, rc.ID)
			r.Tokens = append(r.Tokens, rc.Token)
		}
	case "drop":
		f.drop()
	default:
		r.Err = "unknown command " + cmd
	}
	return r
}

// open dials up to n connections, runs first on each and holds it. A dial that fails (a full backlog)
// is retried after a moment; 200 failures in a row, or 30 s, end the opening.
func (f *flooder) open(n int, first func(net.Conn) error) (opened, dialErrors int) {
	deadline := time.Now().Add(30 * time.Second)
	for inRow := 0; opened < n && inRow < 200 && time.Now().Before(deadline); {
		c, err := net.DialTimeout("unix", f.sock, 200*time.Millisecond)
		if err != nil {
			dialErrors++
			inRow++
			time.Sleep(5 * time.Millisecond)
			continue
		}
		inRow = 0
		if first(c) != nil {
			c.Close()
			continue
		}
		f.hold(c)
		opened++
	}
	return opened, dialErrors
}

func (f *flooder) hold(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = append(f.held, c)
}

func (f *flooder) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.held {
		c.Close()
	}
	f.held = nil
}

// floodRequest sends head (and body, concurrently) on a new connection and returns how it ended.
func floodRequest(sock, head string, body io.Reader) (status, retry string) {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return "dial", ""
	}
	defer c.Close()
	if body != nil {
		go func() {
			if _, err := io.WriteString(c, head); err == nil {
				_, _ = io.Copy(c, body)
			}
		}()
		return floodAnswer(c, "")
	}
	return floodAnswer(c, head)
}

// floodAnswer writes head on c (when not empty) and reads the answer's status line and headers: "200",
// "429 too_many" (the status and the JSON error's code), or "closed" when none came within 70 s.
func floodAnswer(c net.Conn, head string) (status, retry string) {
	status, retry, _ = floodExchange(c, head, false)
	return status, retry
}

// floodExchange is floodAnswer that also returns the answer's body (its first 64 KiB): always for an
// error, and for a success only when withBody is true (a 200 stream's body never ends: it is left unread).
func floodExchange(c net.Conn, head string, withBody bool) (status, retry string, body []byte) {
	_ = c.SetDeadline(time.Now().Add(70 * time.Second))
	if head != "" {
		if _, err := io.WriteString(c, head); err != nil {
			return "closed", "", nil
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "closed", "", nil
	}
	if withBody || resp.StatusCode >= 400 {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	}
	_ = c.SetDeadline(time.Time{})
	st := strconv.Itoa(resp.StatusCode)
	if resp.StatusCode >= 400 {
		var eb struct{ Error struct{ Code string } }
		if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
			st += " " + eb.Error.Code
		}
	}
	return st, resp.Header.Get("Retry-After"), body
}

// dribble is a body that yields one byte every every, left bytes in all.
type dribble struct {
	left  int
	every time.Duration
}

func (d *dribble) Read(p []byte) (int, error) {
	if d.left == 0 {
		return 0, io.EOF
	}
	time.Sleep(d.every)
	d.left--
	p[0] = '{'
	return 1, nil
}
