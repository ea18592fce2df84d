package linux

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FileKind names the file type in a stat mode (its S_IFMT bits) for a message: "a regular file", "a
// directory", "a symbolic link", "a FIFO", "a character device", "a block device", "a socket"; a type
// the kernel does not define reads as its bits ("mode 030000").
func FileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return fmt.Sprintf("mode %#o", mode&unix.S_IFMT)
}
