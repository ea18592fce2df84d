package launcher

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// newID returns a worker id, "w-" and 12 hex digits, random so that ids never repeat across restarts.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (getrandom)
	return "w-" + hex.EncodeToString(b[:])
}

// isID reports whether ref looks like a worker id rather than a token.
func isID(ref string) bool {
	if !strings.HasPrefix(ref, "w-") || len(ref) != 14 {
		return false
	}
	_, err := hex.DecodeString(ref[2:])
	return err == nil
}
