package hostkit

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		b    sdk.Backoff
		want string
	}{
		{sdk.DefaultBackoff(), ""},
		{sdk.Backoff{Base: time.Second, Max: time.Second, Multiplier: 1}, ""},
		{sdk.Backoff{Base: 0, Max: time.Second, Multiplier: 2}, "backoff base_seconds must be positive"},
		{sdk.Backoff{Base: time.Second, Max: -1, Multiplier: 2}, "backoff max_seconds must be positive"},
		{sdk.Backoff{Base: time.Second, Max: time.Second, Multiplier: math.NaN()}, "backoff multiplier must be finite"},
		{sdk.Backoff{Base: time.Second, Max: time.Second, Multiplier: math.Inf(1)}, "backoff multiplier must be finite"},
		{sdk.Backoff{Base: time.Second, Max: time.Second, Multiplier: 0.5}, "backoff multiplier must be at least 1"},
	}
	for _, tt := range tests {
		checkErr(t, tt.b.Validate(), tt.want)
	}
}

// The default is not package state: changing a copy cannot change it.
func TestDefaultBackoffIsAValue(t *testing.T) {
	b := sdk.DefaultBackoff()
	b.Base, b.Max, b.Multiplier = time.Nanosecond, time.Nanosecond, 1
	if got := sdk.DefaultBackoff(); got != (sdk.Backoff{Base: 30 * time.Second, Max: time.Hour, Multiplier: 2}) {
		t.Fatalf("DefaultBackoff() = %+v after changing a copy", got)
	}
}

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		name    string
		b       sdk.Backoff
		attempt int
		want    time.Duration
	}{
		{"first", sdk.DefaultBackoff(), 1, 30 * time.Second},
		{"zero attempt", sdk.DefaultBackoff(), 0, 30 * time.Second},
		{"second", sdk.DefaultBackoff(), 2, 60 * time.Second},
		{"sixth", sdk.DefaultBackoff(), 6, 960 * time.Second},
		{"seventh", sdk.DefaultBackoff(), 7, 1920 * time.Second},
		{"capped", sdk.DefaultBackoff(), 8, time.Hour},
		{"huge attempt", sdk.DefaultBackoff(), math.MaxInt, time.Hour},
		{"base over max", sdk.Backoff{Base: 2 * time.Hour, Max: time.Hour, Multiplier: 2}, 1, time.Hour},
		{"multiplier one", sdk.Backoff{Base: 5 * time.Second, Max: time.Hour, Multiplier: 1}, 50, 5 * time.Second},
		{"huge multiplier", sdk.Backoff{Base: time.Nanosecond, Max: time.Duration(math.MaxInt64), Multiplier: 1e300}, 3, time.Duration(math.MaxInt64)},
		{"invalid uses default", sdk.Backoff{}, 2, 60 * time.Second},
		{"fractional", sdk.Backoff{Base: 10 * time.Second, Max: time.Minute, Multiplier: 1.5}, 3, 22500 * time.Millisecond},
		{"fractional second", sdk.Backoff{Base: 10 * time.Second, Max: time.Minute, Multiplier: 1.5}, 2, 15 * time.Second},
		{"sub-second base", sdk.Backoff{Base: 1500 * time.Millisecond, Max: time.Hour, Multiplier: 3}, 4, 40500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Exact: the fake scheduler's reschedule times are compared
			// with ==, so 59.999999999s for 60s is a bug.
			if got := tt.b.Delay(tt.attempt); got != tt.want {
				t.Fatalf("Delay(%d) = %v (%d ns), want %v", tt.attempt, got, int64(got), tt.want)
			}
		})
	}
}

func TestJobValidators(t *testing.T) {
	checkErr(t, ValidateJobKey("digest"), "")
	checkErr(t, ValidateJobKey(strings.Repeat("k", 128)), "")
	checkErr(t, ValidateJobKey(""), "invalid job key ''")
	checkErr(t, ValidateJobKey(strings.Repeat("k", 129)), "invalid job key '"+strings.Repeat("k", 129)+"'")
	checkErr(t, ValidateHandlerName("post_digest"), "")
	checkErr(t, ValidateHandlerName(""), "invalid handler name ''")
	checkErr(t, ValidateHandlerName(strings.Repeat("h", 65)), "invalid handler name '"+strings.Repeat("h", 65)+"'")
	checkErr(t, ValidateInterval(time.Second), "")
	checkErr(t, ValidateInterval(0), "interval_seconds must be positive")
}

func TestEncodeJobPayload(t *testing.T) {
	tests := []struct {
		in   any
		want string
		err  string
	}{
		{nil, "{}", ""},
		{map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`, ""},
		{struct {
			GuildID uint64 `json:"guild_id"`
		}{7}, `{"guild_id":7}`, ""},
		{(*struct{})(nil), "{}", ""},
		{[]int{1}, "", "job payload must be a JSON object"},
		{"text", "", "job payload must be a JSON object"},
		{map[string]any{"f": func() {}}, "", "job payload must be JSON-serializable: json: unsupported type: func()"},
	}
	for _, tt := range tests {
		got, err := EncodeJobPayload(tt.in)
		checkErr(t, err, tt.err)
		if string(got) != tt.want {
			t.Errorf("EncodeJobPayload(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
	run := sdk.JobRun{Payload: []byte(`{"guild_id":7}`)}
	var p struct {
		GuildID uint64 `json:"guild_id"`
	}
	if err := run.Decode(&p); err != nil || p.GuildID != 7 {
		t.Fatalf("Decode: %v %v", p, err)
	}
}
