package settingvalue

import (
	"reflect"
	"testing"
)

func TestCloneCopiesListsAndKeepsScalars(t *testing.T) {
	lists := []any{
		[]any{"a", uint64(1)},
		[]string{"a", "b"},
		[]uint64{1, 2},
		[]int64{-1, 2},
		[]int{3, 4},
	}
	for _, in := range lists {
		out := Clone(in)
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("Clone(%#v) = %#v", in, out)
		}
		// Writing to the copy must leave the original untouched.
		reflect.ValueOf(out).Index(0).Set(reflect.Zero(reflect.TypeOf(in).Elem()))
		if reflect.DeepEqual(out, in) {
			t.Fatalf("Clone(%#v) shares its backing array", in)
		}
	}
	for _, in := range []any{nil, "s", int64(5), true} {
		if out := Clone(in); out != in {
			t.Fatalf("Clone(%#v) = %#v, want it unchanged", in, out)
		}
	}
}
