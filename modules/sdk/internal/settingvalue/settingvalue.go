// Package settingvalue holds helpers the SDK and its fakes share for
// guild-setting values, so the two cannot drift apart.
package settingvalue

import "slices"

// Clone copies a list-valued setting value (the shapes a document decoder
// or a schema default may hold: []any, []string, []uint64, []int64, []int)
// so the copy does not share a backing array with v; any other value is
// returned as it is.
func Clone(v any) any {
	switch l := v.(type) {
	case []any:
		return slices.Clone(l)
	case []string:
		return slices.Clone(l)
	case []uint64:
		return slices.Clone(l)
	case []int64:
		return slices.Clone(l)
	case []int:
		return slices.Clone(l)
	}
	return v
}
