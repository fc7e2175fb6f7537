package hostkit

import (
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/pyrepr"
)

// Repr quotes s the way the reference's messages quote names (Python's
// repr of a str): 'name', or "it's" when s holds a single quote. Hosts and
// fakes use it to build messages that match the reference exactly.
func Repr(s string) string { return pyrepr.Repr(s) }

func pyRepr(s string) string { return pyrepr.Repr(s) }
func pyReprAny(v any) string { return pyrepr.ReprAny(v) }
func pyStr(v any) string     { return pyrepr.Str(v) }

// contractErrorf builds a *sdk.ModuleContractError from a format string.
func contractErrorf(format string, args ...any) *sdk.ModuleContractError {
	return &sdk.ModuleContractError{Message: fmt.Sprintf(format, args...)}
}
