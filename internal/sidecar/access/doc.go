// Package access decides who may use the sidecar's socket: the peer as the kernel reported it when it
// connected (PeerOf: SO_PEERCRED, SO_PEERGROUPS), the uid and group policy (Policy), and where the peer
// runs (PlaceOf: its pid namespace and cgroup, read while its pidfd shows it alive), with the scope names
// hlaunch gives its workers (GeneratedScope). The sidecar keeps the decision's use: which cgroups and scopes
// are its workers', and the answer to a refused connection.
package access
