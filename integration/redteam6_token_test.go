package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
)

// Red team 6 (issue 24, class 8): a peer of the socket must not make the sidecar read every kept record
// with each request. GET /v1/workers/{token} with a token no record carries (minted: any identity
// serialized with its checksum, which is no secret) missed the token index and read every record for one
// carrying it, on every such request; signal and stop by token did the same. A real sidecar beside 1,001
// kept records (copies of one real worker's record under new ids, each carrying another token): the first
// minted lookup may index the records it has not seen, the 20 after it read none of them again, as the
// sidecar's own count of record reads (hlaunch_sidecar_record_reads_total) shows; a kept record is still
// found by its token. On the old code each minted lookup read all 1,001 records.
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
	var lastID, lastToken string
	for i := range copies {
		wid := fmt.Sprintf("w-%012x", 0xa00000000000+i)
		id.PID = 1<<21 + i
		lastID, lastToken = wid, id.Token()
		copyRec := strings.ReplaceAll(strings.ReplaceAll(string(rec), rc.ID, wid), rc.Token, lastToken)
		must(t, os.WriteFile(filepath.Join(e.State, "workers", wid+".json"), []byte(copyRec), 0o600))
	}
	p = startSidecarProc(t, e, sock)
	minted := func(i int) string {
		id.PID = 1<<22 + i // a token no record carries
		return id.Token()
	}
	if st, body := p.do("GET", "/v1/workers/"+minted(0), ""); st != 200 && st != 404 {
		t.Fatalf("GET of a minted token: %d %s", st, body)
	}
	before := recordReads(t, p)
	for i := 1; i <= 20; i++ {
		if st, body := p.do("GET", "/v1/workers/"+minted(i), ""); st != 200 && st != 404 {
			t.Fatalf("GET of a minted token: %d %s", st, body)
		}
	}
	if n := recordReads(t, p) - before; n > 40 {
		t.Fatalf("20 lookups of tokens no record carries read %d records (of %d kept): each reads the records again", n, copies+1)
	}
	var got receipt
	p.mustDo("GET", "/v1/workers/"+lastToken, "", 200, &got)
	if got.ID != lastID {
		t.Fatalf("a kept record's token names %q, want %s", got.ID, lastID)
	}
}

// recordReads is the sidecar's hlaunch_sidecar_record_reads_total now.
func recordReads(t *testing.T, p *scProc) int {
	t.Helper()
	st, body := p.do("GET", "/v1/metrics", "")
	if st != 200 {
		t.Fatalf("metrics: %d", st)
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "hlaunch_sidecar_record_reads_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			must(t, err)
			return int(n)
		}
	}
	t.Fatalf("no hlaunch_sidecar_record_reads_total in the metrics:\n%s", body)
	return 0
}
