package sidecar

// Defaults of the limits on what the socket's peers may hold at once (docs/sidecar.md, "Limits"). A gateway
// holds a few event streams and tens of concurrent requests; each default is far above that and far below
// what would take the sidecar's descriptors or memory.
const (
	DefaultMaxConns         = 1024
	DefaultMaxConnsPerUID   = 128
	DefaultMaxStreams       = 128
	DefaultMaxStreamsPerUID = 16
	// DefaultMaxWorkers and DefaultMaxWorkersPerUID bound the workers that run at once from the sidecar's
	// spawns: each holds up to the default task and memory limits, so their number is what bounds the
	// host's PIDs and memory taken through the socket.
	DefaultMaxWorkers       = 4096
	DefaultMaxWorkersPerUID = 1024
)

// RetryAfter is the Retry-After (seconds) of a 429 or 503 answer to a peer over a limit: a slot frees as
// soon as any of its holder's connections or streams closes.
const RetryAfter = 1
