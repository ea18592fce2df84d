package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// startGroupSidecar starts a sidecar (startSidecarProcIn, with how and the flags extra) whose socket the
// users of group gid reach: --socket-group gid, and the socket in a directory of its own that every user
// may search (the socket file's group and mode let only gid in), removed at the end. The throw-away
// users' flooders (startFlooder) dial p.sock; p.restart() starts it again with the same socket and flags.
func startGroupSidecar(t *testing.T, e *env, gid int, how scStart, extra ...string) *scProc {
	t.Helper()
	dir, err := os.MkdirTemp(tmpBase, "hlsg-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	flags := append([]string{"--socket-group", strconv.Itoa(gid)}, extra...)
	return startSidecarProcIn(t, e, filepath.Join(dir, "s.sock"), how, flags...)
}
