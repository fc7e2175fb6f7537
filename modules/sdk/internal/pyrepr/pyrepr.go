// Package pyrepr renders values the way the reference (Python) renders them in
// messages, so the SDK, hostkit and the fakes build byte-identical texts.
package pyrepr

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Repr renders s the way Python's repr() renders a str, so error messages
// match the reference byte for byte: single quotes unless the text contains a
// single quote and no double quote; backslash, the quote, \n, \r, \t escaped;
// other non-printable characters as \xNN, \uNNNN or \UNNNNNNNN.
func Repr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(quote):
			b.WriteByte('\\')
			b.WriteByte(quote)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == unicode.ReplacementChar:
			b.WriteRune(r)
		case !unicode.IsPrint(r) && r != ' ':
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// ReprStrings renders a Python list repr of strings: ['a', 'b'].
func ReprStrings(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = Repr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TupleStrings renders a Python tuple repr of strings: ('a',) or ('a', 'b').
func TupleStrings(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = Repr(s)
	}
	return tuple(parts)
}

// TupleInts renders a Python tuple repr of ints: (1,) or (1, 2).
func TupleInts(items []int) string {
	parts := make([]string, len(items))
	for i, n := range items {
		parts[i] = strconv.Itoa(n)
	}
	return tuple(parts)
}

func tuple(parts []string) string {
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Str renders v like Python's str() for the scalar types a document holds.
func Str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case bool:
		if t {
			return "True"
		}
		return "False"
	case json.Number:
		return string(t)
	case nil:
		return "None"
	case float64:
		return Float(t)
	}
	if n, ok := AsInt64(v); ok {
		return strconv.FormatInt(n, 10)
	}
	if n, ok := v.(uint64); ok {
		return strconv.FormatUint(n, 10)
	}
	if n, ok := v.(uint); ok {
		return strconv.FormatUint(uint64(n), 10)
	}
	return fmt.Sprint(v)
}

// Float renders f like Python's str() of a float.
func Float(f float64) string {
	if math.IsInf(f, 1) {
		return "inf"
	}
	if math.IsInf(f, -1) {
		return "-inf"
	}
	if math.IsNaN(f) {
		return "nan"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// ReprAny renders v like Python's repr() for document scalars.
func ReprAny(v any) string {
	if s, ok := v.(string); ok {
		return Repr(s)
	}
	return Str(v)
}

// AsInt64 accepts Go's integer types (never bool).
func AsInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint:
		if uint64(n) > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}
