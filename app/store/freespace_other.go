//go:build !linux

package store

import "errors"

// FreeBytes returns the bytes available on the filesystem holding dir; off
// Linux it reports that it cannot tell.
func FreeBytes(dir string) (int64, error) {
	return 0, errors.New("store: free space: not supported on this system")
}
