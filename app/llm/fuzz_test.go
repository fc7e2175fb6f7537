package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// FuzzSSE: the SSE reader never panics, never returns a payload longer
// than its limit, and returns only what followed a "data:" prefix.
func FuzzSSE(f *testing.F) {
	for _, seed := range []string{
		"data: {\"a\":1}\n\n",
		"data:{\"a\":1}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n",
		"event: x\nid: 1\nretry: 5\ndata: y",
		"data:  two spaces\n",
		strings.Repeat("x", 100) + "\ndata: " + strings.Repeat("y", 100),
		"\r\r\n\n\ndata:\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 64
		r := newSSEReader(bytes.NewReader(in), limit)
		for range len(in) + 1 {
			data, err := r.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(data) == 0 || len(data) > limit {
				t.Fatalf("payload of %d bytes (limit %d)", len(data), limit)
			}
			if !bytes.Contains(in, data) {
				t.Fatalf("payload %q is not in the input", data)
			}
		}
		t.Fatalf("the reader returned more events than the input has bytes")
	})
}

// FuzzDeltaMerge: merging any chunks never panics, stays within its
// byte limit, and ends with tool calls sorted by index, each with an id.
func FuzzDeltaMerge(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"t","arguments":"{\"a\""}}]}}]}` + "\n" +
			`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"s","arguments":"{}"}}]}}]}` + "\n" +
			`{"choices":[{"delta":{"tool_calls":[{"index":-1,"id":"","function":{"arguments":":1}"}}]}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"r","tool_calls":[{"function":{"arguments":{"x":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1}}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":99999999,"id":"x"}]}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 4096
		m := newMerger(limit, func(Event) {})
		for line := range bytes.SplitSeq(in, []byte("\n")) {
			var ch wireChunk
			if json.Unmarshal(line, &ch) != nil {
				continue
			}
			if err := m.add(&ch); err != nil {
				if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
		}
		if m.size > limit+len(in) {
			t.Fatalf("accumulated %d bytes past the limit %d", m.size, limit)
		}
		r := m.result()
		if len(r.Content)+len(r.Reasoning) > limit {
			t.Fatalf("content and reasoning hold %d bytes, limit %d", len(r.Content)+len(r.Reasoning), limit)
		}
		if len(r.ToolCalls) > maxToolCalls {
			t.Fatalf("%d tool calls", len(r.ToolCalls))
		}
		for _, tc := range r.ToolCalls {
			if tc.ID == "" {
				t.Fatalf("a tool call without an id: %+v", tc)
			}
			if (tc.Args == nil) == (tc.ArgsErr == nil) {
				t.Fatalf("a tool call with both or neither of Args and ArgsErr: %+v", tc)
			}
		}
		// Sorted by index: the k-th call is the k-th smallest index's.
		idx := make([]int, 0, len(m.calls))
		for i := range m.calls {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		if len(idx) != len(r.ToolCalls) {
			t.Fatalf("%d indexes, %d calls", len(idx), len(r.ToolCalls))
		}
		for k, i := range idx {
			acc, tc := m.calls[i], r.ToolCalls[k]
			wantID := acc.id.String()
			if wantID == "" {
				wantID = "call_" + strconv.Itoa(i)
			}
			if tc.ID != wantID || tc.Name != acc.name.String() || i < 0 {
				t.Fatalf("call %d is not index %d's: %+v", k, i, tc)
			}
		}
	})
}
