package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/launcher"
)

// TestListWrittenByPages: an unpaged GET /v1/workers, written a page at a time, answers every record in id
// order, byte for byte the encoding of the whole list, with the state filter applied across pages.
func TestListWrittenByPages(t *testing.T) {
	f := newFake()
	var all, exited []launcher.Record
	for i := range 3*listPage + 5 {
		r := launcher.Record{Receipt: launcher.Receipt{ID: fmt.Sprintf("w-%012x", 0xb00+i), Profile: "a", Argv: []string{"<&>"}}, State: fingerprint.Running}
		if i%3 == 0 {
			r.State = fingerprint.Exited
			exited = append(exited, r)
		}
		f.add(r)
		all = append(all, r)
	}
	ts := startTest(t, f, Config{})
	for _, tt := range []struct {
		query string
		want  []launcher.Record
	}{{"", all}, {"?state=exited", exited}, {"?state=corrupt", []launcher.Record{}}} {
		resp, err := ts.client.Get("http://sidecar/v1/workers" + tt.query)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tt.want); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("GET /v1/workers%s: %d\n%s\nwant\n%s", tt.query, resp.StatusCode, got, want.Bytes())
		}
	}
}
