// Package profile composes a child's environ from its target profile: the hermes root and profile
// resolution, the profile's `.env` tokenizer, the name policy, and the environ composed with provenance.
//
// It is pure logic: it reads the target profile's files and the lists the caller passes, and it never
// reads the process environment on its own. A child's environ is built from nothing but the base list
// copied from the launcher, names derived from the target profile, the target's own `.env`, and names the
// caller asks for explicitly; everything else the launcher holds is left behind by construction. The rules
// mirror hermes-agent (see docs/hermes-contract.md); where they deliberately differ the code says why.
package profile
