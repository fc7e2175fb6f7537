package admin

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/web/templates"
)

// TestPendingCacheReadsOncePerChange: the navigation's count is read once,
// served from memory until the service signals a change, and a read that
// raced a change is not kept.
func TestPendingCacheReadsOncePerChange(t *testing.T) {
	var p pendingCache
	reads, value := 0, 3
	read := func(context.Context) (int, error) { reads++; return value, nil }
	ctx := context.Background()
	for range 5 {
		if n, _ := p.get(ctx, read); n != 3 {
			t.Fatalf("count = %d, want 3", n)
		}
	}
	if reads != 1 {
		t.Fatalf("%d reads for five pages, want 1", reads)
	}
	value = 4
	p.invalidate()
	if n, _ := p.get(ctx, read); n != 4 || reads != 2 {
		t.Fatalf("after a change: count %d after %d reads, want 4 after 2", n, reads)
	}
	// A change during the read: the value read may be stale, so the next
	// page reads again.
	racing := func(context.Context) (int, error) { reads++; p.invalidate(); return 9, nil }
	p.invalidate()
	p.get(ctx, racing)
	before := reads
	p.get(ctx, read)
	if reads != before+1 {
		t.Fatal("a count read across a change was kept")
	}
}

// TestSplitDiffPairsRuns: removed lines pair with the added lines after
// them, row by row, with each side's line numbers; unchanged lines show on
// both sides.
func TestSplitDiffPairsRuns(t *testing.T) {
	rows := splitDiff(guildcfg.Diff("a\nb\nc\nd\n", "a\nB\nC2\nC3\nd\n"))
	want := []templates.SplitRow{
		{Header: "@@ -1,4 +1,5 @@"},
		{OldNo: "1", NewNo: "1", Old: "a", New: "a", OldOp: "ctx", NewOp: "ctx", OldMarker: " ", NewMarker: " "},
		{OldNo: "2", NewNo: "2", Old: "b", New: "B", OldOp: "del", NewOp: "add", OldMarker: "-", NewMarker: "+"},
		{OldNo: "3", NewNo: "3", Old: "c", New: "C2", OldOp: "del", NewOp: "add", OldMarker: "-", NewMarker: "+"},
		{NewNo: "4", New: "C3", OldOp: "none", NewOp: "add", NewMarker: "+"},
		{OldNo: "4", NewNo: "5", Old: "d", New: "d", OldOp: "ctx", NewOp: "ctx", OldMarker: " ", NewMarker: " "},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	if got := splitDiff(guildcfg.Diff("same\n", "same\n")); len(got) != 0 {
		t.Errorf("equal texts: %+v", got)
	}
}
