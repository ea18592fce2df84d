// Package trustpath checks that a directory a worker is given (its working directory, its TMPDIR, the
// directory of its log) cannot be changed under it by anyone with less privilege than the worker: every
// component from / down is owned by root or by the worker's uid and writable by neither group nor others,
// except a root-owned sticky directory (as /tmp), and a component that does not exist yet is not in a
// directory others may write (anyone could create it there after the check). Otherwise a user who can write a directory on the way
// swaps what a worker of another uid (root's) creates, runs or reads there.
//
// The walk goes through descriptors (openat O_PATH|O_NOFOLLOW, fstat), as the hermes root and the state
// directory are checked, so what is judged is each directory itself, not what a path named at some
// moment. A symbolic link on the way is followed only when its owner passes the same test (a link in a
// trusted directory cannot be replaced by anyone else); its target is then walked from / again. A ".." is the parent of the directory the walk has reached, as the
// kernel resolves it, never a lexical clean of the path.
package trustpath
