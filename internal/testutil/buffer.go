package testutil

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent use: a child's stdout and stderr copied by os/exec's
// goroutines while the test reads what has arrived so far.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
