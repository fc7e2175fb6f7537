package llm

import (
	"encoding/json"
	"slices"
	"strings"
)

// This is a small copy of app/worldtree's redactor (errors.go), not an
// import: app/llm imports no other Kimi package, and worldtree's is
// unexported. The same lessons hold: a provider may echo the Authorization
// header into anything it sends, so every provider string an error keeps,
// prints or logs passes through it, whatever the key's length.

// redactedMark is what a key is replaced with.
const redactedMark = "[REDACTED]"

// redactor removes the configured keys from provider text. The zero value
// has no keys.
type redactor struct {
	keys []string // non-empty, distinct, longest first
	r    *strings.Replacer
}

func newRedactor(keys ...string) redactor {
	var ks []string
	for _, k := range keys {
		if k == "" {
			continue
		}
		// A raw body (the debug log) has the key as its JSON escapes it:
		// '"', '\', '<', '>' and '&' by Go's encoder, '/' by PHP's.
		for _, v := range []string{k, jsonEscaped(k), slashEscaped(k), slashEscaped(jsonEscaped(k))} {
			if !slices.Contains(ks, v) {
				ks = append(ks, v)
			}
		}
	}
	if len(ks) == 0 {
		return redactor{}
	}
	slices.SortStableFunc(ks, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(ks))
	for _, k := range ks {
		pairs = append(pairs, k, redactedMark)
	}
	return redactor{keys: ks, r: strings.NewReplacer(pairs...)}
}

// String replaces every occurrence of every key in s; when a key is formed
// anew around a marker, the whole string becomes the marker.
func (rd redactor) String(s string) string {
	if rd.r == nil {
		return s
	}
	out := rd.r.Replace(s)
	for _, k := range rd.keys {
		if strings.Contains(out, k) && !strings.Contains(redactedMark, k) {
			return redactedMark
		}
	}
	return out
}

// Field redacts s, then cuts it to n bytes (redacting first, so no part of
// a key survives the cut).
func (rd redactor) Field(s string, n int) string {
	s = rd.String(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// jsonEscaped is k as a JSON string's content (HTML-safe, as Go writes it).
func jsonEscaped(k string) string {
	b, err := json.Marshal(k)
	if err != nil || len(b) < 2 {
		return k
	}
	return string(b[1 : len(b)-1])
}

// slashEscaped is k with each '/' written "\/".
func slashEscaped(k string) string { return strings.ReplaceAll(k, "/", `\/`) }
