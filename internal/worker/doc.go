// Package worker is the vocabulary every part of a launch speaks: the Spec that describes one worker and
// its Validate, the field map from flags to spec fields (field.go), the limits and their JSON, the Receipt
// and the Record with its states, the error sentinels and their exit and JSON codes (errors.go,
// reason.go), worker ids, the credentials rule (identity.go), and the parsers of durations, signals and
// ids. It is the floor the launcher, the records, the placements and the shim stand on: it does no I/O
// beyond pure parsing (and reading /proc/meminfo for the default memory limit), and imports none of them,
// so that they can share these types without a circle of imports.
package worker
