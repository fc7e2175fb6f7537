package admin

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/web/templates"
)

func TestWorldtreeViewHelpers(t *testing.T) {
	traits := map[string]any{
		"ocean": map[string]any{"openness": 0.8, "neuroticism": 0.123456},
		"vibe":  "contemplative", "tags": []any{"calm", 3.0, true}, "none": nil,
		"deep": map[string]any{"a": map[string]any{"b": map[string]any{"c": 1.0}}},
	}
	want := []templates.KeyValue{
		{Key: "deep.a.b", Value: "1 fields"}, {Key: "none", Value: "—"},
		{Key: "ocean.neuroticism", Value: "0.123"}, {Key: "ocean.openness", Value: "0.8"},
		{Key: "tags", Value: "calm, 3, true"}, {Key: "vibe", Value: "contemplative"},
	}
	if got := flattenTraits(traits); !reflect.DeepEqual(got, want) {
		t.Errorf("flattenTraits = %v\nwant %v", got, want)
	}
	many := map[string]any{}
	for i := 0; i < worldtreeMaxTraits+5; i++ {
		many[strings.Repeat("k", i+1)] = "v"
	}
	got := flattenTraits(many)
	if len(got) != worldtreeMaxTraits+1 || got[worldtreeMaxTraits].Value != "5 more not shown" {
		t.Errorf("bounded traits: %d entries, last %v", len(got), got[len(got)-1])
	}
	if long := flattenTraits(map[string]any{"x": strings.Repeat("y", 500)}); len(long[0].Value) > 210 {
		t.Errorf("trait value not clipped: %d bytes", len(long[0].Value))
	}

	for _, tt := range []struct {
		in   float64
		want string
	}{{0.52, "0.52"}, {1, "1"}, {-0.1254, "-0.125"}, {math.NaN(), "—"}, {math.Inf(1), "—"}} {
		if got := formatNumber(tt.in); got != tt.want {
			t.Errorf("formatNumber(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"2026-05-25T22:30:18+00:00", "2026-05-25 22:30 UTC"},
		{"2026-05-25T23:30:18.123+01:00", "2026-05-25 22:30 UTC"},
		{"2026-05-25T22:30:18.5", "2026-05-25 22:30 UTC"},
		{"yesterday", "yesterday"},
		{"", ""},
	} {
		if got := worldtreeTime(tt.in); got != tt.want {
			t.Errorf("worldtreeTime(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		cursor   string
		archived bool
		want     string
	}{
		{"", false, "/worldtree"}, {"", true, "/worldtree?archived=1"},
		{"a b&c=d", false, "/worldtree?cursor=a+b%26c%3Dd"},
	} {
		if got := worldtreeURL(tt.cursor, tt.archived); got != tt.want {
			t.Errorf("worldtreeURL(%q, %v) = %q, want %q", tt.cursor, tt.archived, got, tt.want)
		}
	}
}
