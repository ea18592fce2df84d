// Package idemkeys is the sidecar's store of idempotency keys (POST /v1/workers with Idempotency-Key): one
// file per peer uid and key in a directory of its own, written atomically, bounded in count and age, and a
// lock per key so that a repeat waits for the first spawn with its key. The HTTP handler that uses it is the
// sidecar's (internal/sidecar/idemspawn.go).
package idemkeys
