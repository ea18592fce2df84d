// Package peerlimit bounds what the sidecar's peers hold at once: a Limiter counts each peer uid's
// connections, event streams or running workers against a total and a per-uid share, with a reserve kept
// for root and the sidecar's own uid; the Listener enforces it on connections as they are accepted, keeps
// the descriptors a request passes (SCM_RIGHTS) until that request ends, and waits out a shortage of
// descriptors; Budget fits the connections served to RLIMIT_NOFILE.
package peerlimit
