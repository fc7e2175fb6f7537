package sdktest

import (
	"fmt"
	"strconv"

	"github.com/kimiapp/kimi/modules/sdk"
)

// reprString quotes like the reference's messages (sdk.Repr), so the
// fakes' own messages read like the reference kit's ("no handler 'x'").
func reprString(s string) string { return sdk.Repr(s) }

// panicError turns a recovered panic into an error, as the host does for a
// handler that panics.
func panicError(r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("panic: %w", err)
	}
	return fmt.Errorf("panic: %v", r)
}

func itoa(n int) string { return strconv.Itoa(n) }
