package sandbox

import "errors"

// Sentinel errors of the sandbox half of this package (sandbox*.go, mount*.go), wrapped with %w; the
// wrapping message names the field or path at fault.
var (
	// ErrInvalid: a Spec that cannot be built (a relative or unclean path, a Home that is neither
	// the root nor <root>/profiles/<name>, a writable path that would re-expose what the sandbox hides, an
	// unknown Net value, SetUser with a negative id).
	ErrInvalid = errors.New("invalid sandbox")
	// ErrUnsafePath: a path of the sandbox that passes through a symbolic link. Mounts are made at the
	// literal paths, so a link (planted by a worker in its own home, say) could redirect a writable bind
	// or move a hidden directory out of view.
	ErrUnsafePath = errors.New("sandbox path passes through a symbolic link")
	// ErrNotIsolated: Enter was called outside fresh pid and mount namespaces. Refused: it would remount
	// the host's own file system read-only.
	ErrNotIsolated = errors.New("not inside new namespaces")
	// ErrNoUserNamespace: the caller is not root and the kernel does not let it create a user namespace,
	// so no sandbox can be built.
	ErrNoUserNamespace = errors.New("user namespaces unavailable")
)
