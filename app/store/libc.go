package store

import "runtime/debug"

// sqliteLibcPins maps each modernc.org/sqlite release we have shipped with to
// the exact modernc.org/libc it requires (its go.mod). A mismatch can crash
// at run time; see go-stack-notes §B1 and sqlite's doc.go "Fragile
// modernc.org/libc dependency".
var sqliteLibcPins = map[string]string{
	"v1.62.0": "v1.80.1",
}

// LibcPin reports the modernc.org/libc version built into this binary, the
// version modernc.org/sqlite pins, and whether they match. want is "" when
// the sqlite version is unknown to this table or build info is missing.
func LibcPin() (have, want string, ok bool) {
	info, found := debug.ReadBuildInfo()
	if !found {
		return "", "", false
	}
	return libcPin(info)
}

func libcPin(info *debug.BuildInfo) (have, want string, ok bool) {
	var sqliteVersion string
	for _, d := range info.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		switch d.Path {
		case "modernc.org/libc":
			have = m.Version
		case "modernc.org/sqlite":
			sqliteVersion = m.Version
		}
	}
	want = sqliteLibcPins[sqliteVersion]
	return have, want, want != "" && have == want
}
