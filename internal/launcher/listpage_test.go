package launcher

import (
	"context"
	"testing"
)

// ListPage pages the records by id: pages of a limit, each after the last id of the one before, cover every
// record once, in order, and agree with List.
func TestListPage(t *testing.T) {
	l := listLauncher(t, 7)
	ctx := context.Background()
	all, err := l.List(ctx)
	if err != nil || len(all) != 7 {
		t.Fatalf("list: %d records, %v", len(all), err)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := l.ListPage(ctx, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 || pages > 3 {
			t.Fatalf("page %d after %q: %d records, want at most 3 and 3 pages", pages, after, len(page))
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1].ID
	}
	if len(got) != len(all) {
		t.Fatalf("pages gave %v, want %d records", got, len(all))
	}
	for i, r := range all {
		if got[i] != r.ID {
			t.Fatalf("pages gave %v; record %d is %s in List", got, i, r.ID)
		}
	}
	if page, err := l.ListPage(ctx, all[6].ID, 3); err != nil || len(page) != 0 {
		t.Fatalf("page after the last id: %d records, %v", len(page), err)
	}
}
