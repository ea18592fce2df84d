package systemdtest

import (
	"strconv"
	"syscall"
)

func itoa(i int) string { return strconv.Itoa(i) }

func syscallKill0(pid int) error { return syscall.Kill(pid, 0) }
