package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/hlaunch/hlaunch/internal/fingerprint"
	"github.com/hlaunch/hlaunch/internal/worker"
)

// TestListWrittenByPages: GET /v1/workers, written a page (listPage) at a time, answers the records in id
// order, byte for byte the encoding of the whole list, with the state filter applied across pages; with
// limit, at most limit records after after and, for a full page, its cursor.
func TestListWrittenByPages(t *testing.T) {
	f := newFake()
	var all, exited []worker.Record
	for i := range 3*listPage + 5 {
		r := worker.Record{Receipt: worker.Receipt{ID: fmt.Sprintf("w-%012x", 0xb00+i), Profile: "a", Argv: []string{"<&>"}}, State: fingerprint.Running}
		if i%3 == 0 {
			r.State = fingerprint.Exited
			exited = append(exited, r)
		}
		f.add(r)
		all = append(all, r)
	}
	ts := startTest(t, f, Config{})
	exitedIn := func(recs []worker.Record) []worker.Record {
		out := []worker.Record{}
		for _, r := range recs {
			if r.State == fingerprint.Exited {
				out = append(out, r)
			}
		}
		return out
	}
	n := 2*listPage + 3
	for _, tt := range []struct {
		query string
		want  []worker.Record
		next  string
	}{
		{"", all, ""},
		{"?state=exited", exited, ""},
		{"?state=corrupt", []worker.Record{}, ""},
		{fmt.Sprint("?limit=", n), all[:n], all[n-1].ID},
		{fmt.Sprint("?limit=", n, "&after=", all[n-1].ID), all[n:], ""},
		{fmt.Sprint("?limit=", n, "&state=exited"), exitedIn(all[:n]), all[n-1].ID},
		{"?limit=1&after=" + all[3].ID, all[4:5], all[4].ID},
		{"?limit=10000", all, ""},
		{"?after=" + all[len(all)-1].ID, []worker.Record{}, ""},
	} {
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
		if h := resp.Header.Get(NextAfterHeader); h != tt.next {
			t.Fatalf("GET /v1/workers%s: %s %q, want %q", tt.query, NextAfterHeader, h, tt.next)
		}
	}
}
