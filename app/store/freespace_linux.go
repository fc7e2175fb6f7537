package store

import (
	"fmt"
	"syscall"
)

// FreeBytes returns the bytes available to Kimi (an unprivileged process)
// on the filesystem holding dir. It is one statfs call: cheap enough to ask
// when a page renders, so nothing polls it.
func FreeBytes(dir string) (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, fmt.Errorf("store: free space of %s: %w", dir, err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}
