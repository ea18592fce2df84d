// Package nsenv is the child's world, in two packages: internal/nsenv/profile composes a worker's environ from its
// target profile (the hermes root, profile resolution, the `.env` tokenizer, the name policy, provenance),
// and internal/nsenv/sandbox builds the Linux namespaces and mounts a sandboxed worker runs in (the profile view,
// hardening). This package itself holds no code.
package nsenv
