package sdktest

import "fmt"

// panicError turns a recovered panic into an error, as the host does for a
// handler that panics.
func panicError(r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("panic: %w", err)
	}
	return fmt.Errorf("panic: %v", r)
}
