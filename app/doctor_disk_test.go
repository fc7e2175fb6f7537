package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorDiskReportsFreeSpaceAndTheWALSize(t *testing.T) {
	tests := []struct {
		name     string
		wal      int64 // -1: no WAL file
		want     []string
		warnings int
	}{
		{"no WAL", -1, []string{"MiB free in ", "; no WAL"}, 0},
		{"a small WAL", 3 << 20, []string{"; WAL 3 MiB"}, 0},
		{"a WAL checkpoints cannot shrink", 300 << 20, []string{"; WAL 300 MiB", "warn  disk      the WAL", "is 300 MiB: checkpoints are not shrinking it"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "kimi.db")
			if tt.wal >= 0 {
				f, err := os.Create(db + "-wal")
				if err != nil {
					t.Fatal(err)
				}
				// Sparse: the size is what the check reads, not the blocks.
				if err := f.Truncate(tt.wal); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			var out bytes.Buffer
			r := &doctorReport{w: &out}
			checkDisk(r, dir, db)
			for _, want := range append(tt.want, dir) {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
			// The temporary directory may itself be low on space (a warning
			// of its own); the WAL warning is counted apart.
			if n := strings.Count(out.String(), "checkpoints are not shrinking it"); n != tt.warnings {
				t.Errorf("%d WAL warnings, want %d:\n%s", n, tt.warnings, out.String())
			}
		})
	}
}
