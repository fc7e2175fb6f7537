package sdk

import "github.com/kimiapp/kimi/modules/sdk/internal/pyrepr"

// Repr quotes s the way the original's messages quote values (Python's repr
// of a str): 'name', or "it's" when s holds a single quote and no double
// quote; backslashes, the quote and control characters escaped. Modules use
// it to word their messages like the original's; it is hostkit.Repr's code.
func Repr(s string) string { return pyrepr.Repr(s) }

// The reference's (Python's) renderings used in messages; hostkit and the
// fakes share the same code through internal/pyrepr.
func pyRepr(s string) string               { return pyrepr.Repr(s) }
func pyReprStrings(items []string) string  { return pyrepr.ReprStrings(items) }
func pyTupleStrings(items []string) string { return pyrepr.TupleStrings(items) }
func pyTupleInts(items []int) string       { return pyrepr.TupleInts(items) }
func pyStr(v any) string                   { return pyrepr.Str(v) }
func pyReprAny(v any) string               { return pyrepr.ReprAny(v) }
func asInt64(v any) (int64, bool)          { return pyrepr.AsInt64(v) }
