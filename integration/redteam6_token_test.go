package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// Red team 6 (issue 24, class 8), open: a peer of the socket makes the sidecar read every kept record with
// each request. GET /v1/workers/{token} with a token the index does not hold (minted: any identity
// serialized with its checksum, which is no secret) misses the token index and reads every record for
// one carrying it (internal/launcher/index.go, byToken's scanToken), before it answers the bare token's
// verdict; signal and stop by token do the same. With the default 1,000 kept records each such request
// costs a thousand record reads and decodes against one for a worker id, and a socket-group user's 128
// connections ask as fast as the sidecar answers. A real sidecar beside 1,000 kept records (copies of
// one real worker's record under new ids, each carrying another token): 20 lookups of minted tokens,
// interleaved with 20 lookups by worker id, must cost no more than 5 times as much. On today's code they
// cost more than ten times as much (70 ms of the sidecar's CPU per lookup on the test machine).
func TestRedteam6UnknownTokenReadsEveryRecord(t *testing.T) {
	requireRoot(t)
	requireCgroup2(t)
	e := newEnv(t)
	sock := filepath.Join(scSocketDir(t), "s.sock")
	p := startSidecarProc(t, e, sock)
	var rc receipt
	p.mustDo("POST", "/v1/workers", scSpec("a", "/bin/true"), 201, &rc)
	p.mustDo("GET", "/v1/workers/"+rc.ID+"/wait?timeout=30s", "", 200, nil)
	p.stop()
	rec, err := os.ReadFile(filepath.Join(e.State, "workers", rc.ID+".json"))
	must(t, err)
	id, err := fingerprint.ParseToken(rc.Token)
	must(t, err)
	const copies = 1000
	for i := range copies {
		wid := fmt.Sprintf("w-%012x", 0xa00000000000+i)
		id.PID = 1<<21 + i
		copyRec := strings.ReplaceAll(strings.ReplaceAll(string(rec), rc.ID, wid), rc.Token, id.Token())
		must(t, os.WriteFile(filepath.Join(e.State, "workers", wid+".json"), []byte(copyRec), 0o600))
	}
	p = startSidecarProc(t, e, sock)
	var byID, byToken time.Duration
	for i := range 20 {
		began := time.Now()
		p.mustDo("GET", "/v1/workers/"+rc.ID, "", 200, nil)
		byID += time.Since(began)
		id.PID = 1<<22 + i // a token no record carries
		began = time.Now()
		if st, body := p.do("GET", "/v1/workers/"+id.Token(), ""); st != 200 && st != 404 {
			t.Fatalf("GET of a minted token: %d %s", st, body)
		}
		byToken += time.Since(began)
	}
	if byToken > 5*byID {
		t.Fatalf("20 lookups of tokens no record carries took %s, 20 by worker id %s: each reads every one of the %d kept records",
			byToken, byID, copies+1)
	}
}
