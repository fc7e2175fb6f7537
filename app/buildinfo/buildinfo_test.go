package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Version: "v0.9.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "deadbeef"},
			{Key: "vcs.time", Value: "2026-11-29T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	tests := []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{
			name:    "stamp wins over vcs",
			version: "v1.0.0", commit: "abc", date: "2026-01-01T00:00:00Z",
			bi:   vcs,
			want: Info{Version: "v1.0.0", Commit: "abc", Date: "2026-01-01T00:00:00Z", GoVersion: "go1.26.8", Modified: true},
		},
		{
			name: "vcs fallback",
			bi:   vcs,
			want: Info{Version: "v0.9.0", Commit: "deadbeef", Date: "2026-11-29T10:00:00Z", GoVersion: "go1.26.8", Modified: true},
		},
		{
			name: "nothing known",
			bi:   devel,
			want: Info{Version: "dev", Commit: "unknown", Date: "unknown", GoVersion: "go1.26.8"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.version, tt.commit, tt.date, func() (*debug.BuildInfo, bool) { return tt.bi, true })
			if got != tt.want {
				t.Fatalf("resolve() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
