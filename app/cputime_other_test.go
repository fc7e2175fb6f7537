//go:build !linux

package app

import "time"

// processCPU is unknown here (0): a benchmark leaves out its CPU figure.
func processCPU() time.Duration { return 0 }
