package sdktest

import "fmt"

// recovering runs fn and turns a panic into an error ("panic: …", wrapping
// the panic value when it is an error), as the host does for a handler or
// migration that panics.
func recovering(fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if rerr, ok := r.(error); ok {
			err = fmt.Errorf("panic: %w", rerr)
			return
		}
		err = fmt.Errorf("panic: %v", r)
	}()
	return fn()
}
