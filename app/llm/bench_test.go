package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
)

// recordedStream is a deterministic ~10k-token stream as a provider sends
// it: 3,000 reasoning deltas, 3,000 text deltas, then two parallel tool
// calls whose arguments come in 2,000 interleaved fragments each, a finish
// chunk, a usage chunk and [DONE] (one delta ≈ one token). It returns the
// SSE bytes and the chunks' JSON texts.
func recordedStream() ([]byte, [][]byte) {
	var sse bytes.Buffer
	var chunks [][]byte
	add := func(choice string) {
		c := fmt.Sprintf(`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"kimi-k2.6","choices":[%s]}`, choice)
		chunks = append(chunks, []byte(c))
		sse.WriteString("data: " + c + "\n\n")
	}
	words := []string{"the", " model", " streams", " a", " token", " at", " a", " time", ",", " Kimi"}
	for i := range 3000 {
		add(fmt.Sprintf(`{"index":0,"delta":{"reasoning_content":%q},"finish_reason":null}`, words[i%len(words)]))
	}
	for i := range 3000 {
		add(fmt.Sprintf(`{"index":0,"delta":{"content":%q},"finish_reason":null}`, words[(i+3)%len(words)]))
	}
	for k, name := range []string{"give_kudos", "kudos_leaderboard"} {
		add(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":%q,"arguments":""}}]},"finish_reason":null}`, k, k, name))
	}
	frag := func(i int) string {
		if i == 0 {
			return `{"notes":"`
		}
		if i == 1999 {
			return `"}`
		}
		return "ab"
	}
	for i := range 2000 {
		for k := range 2 {
			add(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%q}}]},"finish_reason":null}`, k, frag(i)))
		}
	}
	add(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
	usage := `{"id":"chatcmpl-bench","object":"chat.completion.chunk","model":"kimi-k2.6","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":10004,"total_tokens":11204}}`
	chunks = append(chunks, []byte(usage))
	sse.WriteString("data: " + usage + "\n\n: keep-alive\n\ndata: [DONE]\n\n")
	return sse.Bytes(), chunks
}

// decodeStream is the client's decode path: the SSE reader and the merger.
func decodeStream(r io.Reader) (Response, error) {
	sse := newSSEReader(r, MaxLineBytes)
	m := newMerger(MaxAnswerBytes, nil)
	for {
		data, err := sse.next()
		if err == io.EOF {
			return m.result(), nil
		}
		if err != nil {
			return Response{}, err
		}
		if bytes.Equal(data, doneMarker) {
			return m.result(), nil
		}
		var ch wireChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return Response{}, err
		}
		if err := m.add(&ch); err != nil {
			return Response{}, err
		}
	}
}

func TestRecordedStreamDecodes(t *testing.T) {
	stream, chunks := recordedStream()
	resp, err := decodeStream(bytes.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 10000 || len(resp.ToolCalls) != 2 || resp.ToolCalls[1].Name != "kudos_leaderboard" ||
		resp.ToolCalls[0].ArgsErr != nil || len(resp.ToolCalls[0].Args["notes"].(string)) != 2*1998 ||
		resp.Usage.CompletionTokens != 10004 || resp.FinishReason != "tool_calls" {
		t.Fatalf("decoded %d chunks into %+v", len(chunks), resp.ToolCalls)
	}
}

// BenchmarkLLMStreamDecode measures the SSE reader and the delta merger on
// the recorded stream (ns/op, MB/s, allocs/op are theirs), and beside it,
// in the same run with the timer stopped, plain json.Unmarshal of the same
// chunks into the same chunk type: unmarshal-MB/s, unmarshal-allocs/op and
// the ratio decode/unmarshal of throughput (1.0: the reader and the merger
// cost nothing beyond the JSON decode).
func BenchmarkLLMStreamDecode(b *testing.B) {
	stream, chunks := recordedStream()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var base time.Duration
	var baseAllocs uint64
	var ms runtime.MemStats
	for b.Loop() {
		if _, err := decodeStream(bytes.NewReader(stream)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		start := time.Now()
		for _, c := range chunks {
			var ch wireChunk
			if err := json.Unmarshal(c, &ch); err != nil {
				b.Fatal(err)
			}
		}
		base += time.Since(start)
		runtime.ReadMemStats(&ms)
		baseAllocs += ms.Mallocs - before
		b.StartTimer()
	}
	n := float64(b.N)
	mb := float64(len(stream)) / 1e6
	decodeMBs := mb * n / b.Elapsed().Seconds()
	baseMBs := mb * n / base.Seconds()
	b.ReportMetric(baseMBs, "unmarshal-MB/s")
	b.ReportMetric(float64(baseAllocs)/n, "unmarshal-allocs/op")
	b.ReportMetric(decodeMBs/baseMBs, "decode/unmarshal")
	b.ReportMetric(float64(len(chunks)), "chunks")
}
