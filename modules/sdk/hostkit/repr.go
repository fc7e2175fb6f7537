package hostkit

import (
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/names"
	"github.com/kimiapp/kimi/modules/sdk/internal/pyrepr"
)

// Repr quotes s the way the reference's messages quote names (Python's
// repr of a str): 'name', or "it's" when s holds a single quote. Hosts and
// fakes use it to build messages that match the reference exactly; modules
// use sdk.Repr, the same function.
func Repr(s string) string { return pyrepr.Repr(s) }

func pyRepr(s string) string { return pyrepr.Repr(s) }
func pyReprAny(v any) string { return pyrepr.ReprAny(v) }
func pyStr(v any) string     { return pyrepr.Str(v) }

// contractErrorf builds a *sdk.ModuleContractError from a format string.
func contractErrorf(format string, args ...any) *sdk.ModuleContractError {
	return &sdk.ModuleContractError{Message: fmt.Sprintf(format, args...)}
}

// ValidateModuleName checks a module name as Spec.Validate does, for hosts
// handed a bare name (a storage port, a selection): `[a-z][a-z0-9_-]{0,63}`
// and not "discord" or "proposals" after "-"→"_", nor starting with
// "sqlite". Messages: "invalid module name 'x'", "module name 'x' is
// reserved by core", "module name 'sqlite' uses table prefix 'sqlite_',
// which is reserved for SQLite's own tables".
func ValidateModuleName(name string) error {
	if !names.ModuleNameRE.MatchString(name) {
		return contractErrorf("invalid module name %s", Repr(name))
	}
	if p := names.TablePrefix(name); p == sdk.CoreTopicPrefix || p == "proposals" {
		return contractErrorf("module name %s is reserved by core", Repr(name))
	}
	if msg := names.SQLiteReservedMessage(name); msg != "" {
		return contractErrorf("%s", msg)
	}
	return nil
}
