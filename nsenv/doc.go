// Package nsenv builds the child's world: the hermes root and profile resolution, the profile's `.env`
// tokenizer, the name policy, and the child's environ composed with provenance (profile env), and the sandbox
// the child runs in (namespaces, mounts, hardening; see sandbox*.go and mount*.go).
//
// The environ half is pure logic: it reads the target profile's files and the lists the caller passes, and
// it never reads the process environment on its own. A child's environ is built from nothing but the base
// list copied from the launcher, names derived from the target profile, the target's own `.env`, and names
// the caller asks for explicitly; everything else the launcher holds is left behind by construction. The
// rules mirror hermes-agent (see docs/hermes-contract.md); where they deliberately differ
// the code says why.
package nsenv
