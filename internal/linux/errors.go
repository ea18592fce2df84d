package linux

import "errors"

// ErrMalformed reports kernel text that does not have the form the kernel writes: a truncated or altered
// file, or a parser given the wrong file.
var ErrMalformed = errors.New("linux: malformed kernel file")
