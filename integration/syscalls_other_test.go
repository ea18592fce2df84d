//go:build !amd64

package integration

// probesArch are the calls only some architectures have: none here (arm64 has only the *at forms and no
// port I/O).
var probesArch = map[string]probe{}
