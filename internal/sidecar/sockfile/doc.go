// Package sockfile makes the sidecar's Unix socket file: bound with its final mode and group before anyone
// can connect, inside a fresh 0700 directory held by a descriptor so that another uid that may write the
// socket's directory cannot redirect a chmod or chown, then renamed into place; a live server's socket and
// anything that is not a socket are never replaced.
package sockfile
