package sandbox

// FileID names one directory by device and inode: what a later open of the same path must find again.
// The zero value means "unknown". It mirrors profile.FileID (the launcher converts one into the other), so
// that this package needs nothing of the environ half.
type FileID struct {
	// Dev and Ino are st_dev and st_ino.
	Dev, Ino uint64
}
