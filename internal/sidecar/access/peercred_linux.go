package access

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PeerOf reads the kernel's record of who connected c: SO_PEERCRED (pid, uid, gid) and SO_PEERGROUPS
// (supplementary groups, Linux 4.13+; nil where unsupported, and then only the primary gid counts).
func PeerOf(c net.Conn) (Peer, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return Peer{}, fmt.Errorf("%w: %T is not a socket connection", ErrForbidden, c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var opErr error
	err = raw.Control(func(fd uintptr) {
		uc, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			opErr = os.NewSyscallError("getsockopt SO_PEERCRED", err)
			return
		}
		p = Peer{PID: uc.Pid, UID: uc.Uid, GID: uc.Gid}
		groups, err := peerGroups(int(fd))
		if err == nil {
			p.Groups = groups
		}
	})
	if err != nil {
		return Peer{}, err
	}
	return p, opErr
}

// peerGroups calls getsockopt(SO_PEERGROUPS) directly: x/sys has no typed wrapper for it, and its
// GetsockoptString would cut the binary gid array at the first zero byte. This is the package's only use
// of unsafe: the kernel writes an array of 32-bit gids into buf and its byte length into n.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 32)
	for range 4 {
		n := uint32(len(buf) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case e == 0:
			return buf[:n/4], nil
		case errors.Is(e, unix.ERANGE):
			buf = make([]uint32, n/4+1) // the kernel told us the size it needs
		default:
			return nil, os.NewSyscallError("getsockopt SO_PEERGROUPS", e)
		}
	}
	return nil, os.NewSyscallError("getsockopt SO_PEERGROUPS", unix.ERANGE)
}
