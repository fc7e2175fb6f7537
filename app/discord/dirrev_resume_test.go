package discord

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// TestDirectoryRevisionMovesAcrossAResume: while the gateway is down
// (between a drop and its resume) the directory answers nothing for the
// guild; the revision moves when the session goes and again when it is
// back (a resume sends no READY), so a page part rendered in the gap is
// not kept as good after the resume.
func TestDirectoryRevisionMovesAcrossAResume(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	const gid = "111111111111111111"
	f.AddGuild(fakediscord.GuildSpec{ID: gid, Name: "G"})
	f.AddChannel(fakediscord.ChannelSpec{GuildID: gid, Name: "general"})
	clk := newFlapClock()
	b := flapBot(t, f, clk)
	b.Start(context.Background())
	connWaitState(t, b, StateConnected)
	g := parseID(gid)
	connWaitFor(t, "the channel", func() bool { return len(b.Channels(g)) > 0 })
	before := b.DirectoryRevision(g)
	f.DropConnections()
	tm := nextTimer(t, clk) // the loop waits to resume: b.sess is nil now
	gap := len(b.Channels(g))
	gapRev := b.DirectoryRevision(g)
	tm.fire()
	connWaitFor(t, "a resume", func() bool { return f.GatewayStats().Resumes == 1 && b.Status().State == StateConnected })
	after := len(b.Channels(g))
	afterRev := b.DirectoryRevision(g)
	if gap != 0 || after == 0 {
		t.Fatalf("channels in the gap %d, after the resume %d: want none, then the guild's", gap, after)
	}
	if gapRev == before || afterRev == gapRev {
		t.Errorf("revisions before, in the gap and after the resume: %d, %d, %d — want each to differ", before, gapRev, afterRev)
	}
}
