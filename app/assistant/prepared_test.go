package assistant

import (
	"context"
	"testing"
)

// TestWritesRunPrepared: a write's statements are prepared after its
// transaction, and the next transactions run them prepared with the same
// results; past maxPrepared texts a statement runs unprepared.
func TestWritesRunPrepared(t *testing.T) {
	ctx := context.Background()
	c, _, clk := newConversations(t)
	logTurn(t, c, clk, guildPlace, 1000, 7, StatusDone)
	c.prepared.mu.RLock()
	n := len(c.prepared.stmts)
	c.prepared.mu.RUnlock()
	if n == 0 {
		t.Fatal("no statement prepared after a turn")
	}
	logTurn(t, c, clk, guildPlace, 1001, 7, StatusDone)
	p, err := c.List(ctx, LogFilter{}, LogCursor{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 2 || p.Rows[0].Turns != 1 || p.Rows[0].LastStatus != StatusDone {
		t.Errorf("after a turn written with prepared statements the log holds %+v", p.Rows)
	}

	var full preparedSet
	for i := range maxPrepared + 10 {
		full.get("SELECT " + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	if len(full.wanted) != maxPrepared {
		t.Errorf("%d statements wanted, want at most %d", len(full.wanted), maxPrepared)
	}
}
