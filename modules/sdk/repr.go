package sdk

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// pyRepr renders s the way Python's repr() renders a str, so error messages
// match the reference byte for byte: single quotes unless the text contains a
// single quote and no double quote; backslash, the quote, \n, \r, \t escaped;
// other non-printable characters as \xNN, \uNNNN or \UNNNNNNNN.
func pyRepr(s string) string {
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

// pyReprStrings renders a Python list repr of strings: ['a', 'b'].
func pyReprStrings(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = pyRepr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyTupleStrings renders a Python tuple repr of strings: ('a',) or ('a', 'b').
func pyTupleStrings(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = pyRepr(s)
	}
	return pyTuple(parts)
}

// pyTupleInts renders a Python tuple repr of ints: (1,) or (1, 2).
func pyTupleInts(items []int) string {
	parts := make([]string, len(items))
	for i, n := range items {
		parts[i] = strconv.Itoa(n)
	}
	return pyTuple(parts)
}

func pyTuple(parts []string) string {
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Repr quotes s the way the reference's messages quote names (Python's
// repr of a str): 'name', or "it's" when s holds a single quote. Hosts and
// fakes use it to build messages that match the reference exactly.
func Repr(s string) string { return pyRepr(s) }
