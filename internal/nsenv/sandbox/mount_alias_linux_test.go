package sandbox

import (
	"reflect"
	"strings"
	"testing"

	mi "github.com/hlaunch/hlaunch/internal/mountinfo"
)

// TestAliasesIn: on a table where the root /data/hermes (device 8:1, mounted at /data) is shown again by
// bind mounts, every mount showing files of the root outside B's home is an alias, and nothing else.
func TestAliasesIn(t *testing.T) {
	table := `1 0 8:2 / / rw - ext4 /dev/sda2 rw
2 1 8:1 / /data rw - ext4 /dev/sda1 rw
3 1 8:1 /hermes /var/tmp/alias rw - ext4 /dev/sda1 rw
4 1 8:1 / /mnt/whole rw - ext4 /dev/sda1 rw
5 1 8:1 /hermes/profiles/a /srv/a rw - ext4 /dev/sda1 rw
6 1 8:1 /hermes/profiles/b/workspace /srv/bws rw - ext4 /dev/sda1 rw
7 1 8:1 /other /srv/other rw - ext4 /dev/sda1 rw
8 1 8:3 /hermes /srv/elsewhere rw - ext4 /dev/sda3 rw
9 2 8:1 /hermes/profiles /data/hermes/profiles rw - ext4 /dev/sda1 rw
`
	entries, err := mi.Parse(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	got := aliasesIn(entries, 8, 1, "/data/hermes", "/data/hermes/profiles/b")
	want := []string{"/var/tmp/alias", "/mnt/whole/hermes", "/srv/a"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("aliases %q, want %q", got, want)
	}
}
