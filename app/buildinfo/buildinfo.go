// Package buildinfo holds the version stamp of the kimi binary.
//
// Release builds set the variables with the linker:
//
//	go build -ldflags "-X github.com/kimiapp/kimi/app/buildinfo.Version=v1.2.3 \
//	  -X github.com/kimiapp/kimi/app/buildinfo.Commit=abc123 \
//	  -X github.com/kimiapp/kimi/app/buildinfo.Date=2026-11-29T15:00:00Z"
//
// Builds without the stamp fall back to the VCS information Go records in the
// binary (debug.ReadBuildInfo), so `go install` and `go build` still report
// something useful.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Stamped at link time with -X; empty when not stamped.
var (
	// Version is the release version, e.g. "v0.1.0".
	Version string
	// Commit is the VCS revision the binary was built from.
	Commit string
	// Date is the build time in RFC 3339 form.
	Date string
)

// Info is the resolved build information of the running binary.
type Info struct {
	Version   string // release version or "dev"
	Commit    string // VCS revision or "unknown"
	Date      string // build or commit time or "unknown"
	GoVersion string // toolchain that built the binary
	Modified  bool   // the work tree had uncommitted changes (from VCS info only)
}

// Get returns the build information, preferring the link-time stamp and
// falling back to the module and VCS data embedded by the Go toolchain.
func Get() Info {
	return resolve(Version, Commit, Date, debug.ReadBuildInfo)
}

func resolve(version, commit, date string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi, ok := read(); ok && bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
}
