// Package beneath opens paths below a directory descriptor without ever following a symbolic link, so
// that what was checked is what is opened.
//
// A path that is checked as a string and then opened as a string can be changed in between: a worker
// renames (renameat2 RENAME_EXCHANGE) a directory of its own home for a symbolic link to another
// profile, and the launcher reads that profile's .env or creates a root-owned file where the worker
// chose. Everything here resolves a path once, from a descriptor, with openat2's
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS (and O_NOFOLLOW on the last component), and
// later steps work on the descriptor it returned. On a kernel without openat2 (before 5.6) the same
// rules are applied one component at a time with openat(O_NOFOLLOW): a ".." component is refused
// outright and every symbolic link, magic links included, fails, which is as strict as the flags.
package beneath
