// Package msgpipe is the transport the launcher shares with the two roles it re-executes its own binary
// as: the init stub (internal/handshake) and the worker's shim (internal/shim). It owns the two pipes such
// a child inherits as fds 3 (ConfigFD: the parent writes, the child reads) and 4 (ResultFD: the child
// answers) and the framing of every message on them: a 4-byte big-endian length, then at most Max bytes.
// What travels in a frame, and what EOF on either pipe means, is each protocol's own (handshake/sync.go,
// shim/doc.go); this package knows neither.
package msgpipe
