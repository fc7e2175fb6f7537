package guildcfg

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestDocumentCacheFollowsEveryWritePath reads a document (so the cache
// holds it), changes it through each write path of the Service, and reads
// it again: the read must show the change at once, parsed anew, for the
// server setup and for a module's settings.
func TestDocumentCacheFollowsEveryWritePath(t *testing.T) {
	ctx := context.Background()
	type doc struct {
		target       Target
		first, other string
		check        func(t *testing.T, d Document, text string)
	}
	docs := map[string]doc{
		"guild": {GuildTarget(7), "---\nbot_active: true\nstaff_role_ids: [5]\n---\nbody one\n", "---\nbot_active: false # off\n---\nbody two\n",
			func(t *testing.T, d Document, text string) {
				want, _ := ParseGuildDocument(text)
				if d.Guild == nil || !reflect.DeepEqual(*d.Guild, want) {
					t.Fatalf("Guild = %+v, want %+v", d.Guild, want)
				}
				if d.Comments != FrontmatterHasComments(text) {
					t.Fatalf("Comments = %v for %q", d.Comments, text)
				}
			}},
		"module": {GuildModuleTarget(7, "alpha"), "---\nmode: quiet\nlimit: 1\n---\n", "---\nmode: loud\nchannel_id: 12\n---\n",
			func(t *testing.T, d Document, text string) {
				want, problems := EvaluateModuleDocument(*testSpecs()[0].GuildSettings, text, true)
				if d.Settings == nil || !reflect.DeepEqual(*d.Settings, want) || !reflect.DeepEqual(d.Problems, problems) {
					t.Fatalf("Settings = %+v %v, want %+v %v", d.Settings, d.Problems, want, problems)
				}
			}},
	}
	paths := []struct {
		name string
		// change alters the document, which holds first; it returns the
		// text the document must hold now ("" for absent).
		change func(t *testing.T, s *Service, d doc) string
	}{
		{"write", func(t *testing.T, s *Service, d doc) string {
			mustWrite(t, s, d.target, d.other)
			return d.other
		}},
		{"revert", func(t *testing.T, s *Service, d doc) string {
			mustWrite(t, s, d.target, d.other)
			h, err := s.History(ctx, d.target, HistoryPage{})
			if err != nil || len(h.Entries) != 2 {
				t.Fatalf("History = %+v, %v", h, err)
			}
			cur, _ := s.Document(ctx, d.target) // cached: holds other
			if cur.Text != d.other {
				t.Fatalf("before the revert Text = %q", cur.Text)
			}
			if _, err := s.Revert(ctx, d.target, h.Entries[1].ID, cur.Revision, admin); err != nil {
				t.Fatalf("Revert: %v", err)
			}
			return d.first
		}},
		{"delete", func(t *testing.T, s *Service, d doc) string {
			if err := s.Delete(ctx, d.target, Revision(d.first), Actor{Kind: ActorProposal, Name: "9"}); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			return ""
		}},
		{"reload", func(t *testing.T, s *Service, d doc) string {
			// A restore replaces the database and the Service reloads.
			err := s.db.Write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE kimi_documents SET content = ?, revision = ? WHERE target = ?`,
					d.other, Revision(d.other), d.target.String())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			return d.other
		}},
		{"refused write", func(t *testing.T, s *Service, d doc) string {
			if _, err := s.Write(ctx, d.target, d.other, EmptyRevision, admin); err == nil {
				t.Fatal("a stale revision was written")
			}
			return d.first
		}},
	}
	for _, p := range paths {
		for kind, d := range docs {
			t.Run(p.name+"/"+kind, func(t *testing.T) {
				st := openStore(t)
				s := newService(t, st, TrustSettings{})
				mustWrite(t, s, d.target, d.first)
				before, err := s.Document(ctx, d.target)
				if err != nil || before.Text != d.first {
					t.Fatalf("Document = %q, %v", before.Text, err)
				}
				want := p.change(t, s, d)
				got, err := s.Document(ctx, d.target)
				if err != nil {
					t.Fatal(err)
				}
				if got.Text != want || got.Exists != (want != "") {
					t.Fatalf("after %s: Text %q Exists %v, want %q", p.name, got.Text, got.Exists, want)
				}
				if want == "" {
					if got.Revision != EmptyRevision || got.Guild != nil || got.Frontmatter != nil {
						t.Fatalf("absent document reads %+v", got)
					}
					return
				}
				if got.Revision != Revision(want) {
					t.Fatalf("Revision = %s, want that of %q", got.Revision, want)
				}
				fm, _ := ParseFrontmatter(want)
				if got.Frontmatter == nil || !reflect.DeepEqual(*got.Frontmatter, fm) {
					t.Fatalf("Frontmatter = %+v, want %+v", got.Frontmatter, fm)
				}
				d.check(t, got, want)
				// A Service that reads the database anew agrees.
				fresh, err := newService(t, st, TrustSettings{}).Document(ctx, d.target)
				if err != nil || fresh.Text != got.Text || fresh.Revision != got.Revision {
					t.Fatalf("from the database: %q %s, %v; cached %q %s", fresh.Text, fresh.Revision, err, got.Text, got.Revision)
				}
			})
		}
	}
}

// TestDocumentCacheRefusesAReadOlderThanAWrite is the race of a reader that
// misses, reads the database, and offers what it read after a write
// committed: the offer must not replace the written revision.
func TestDocumentCacheRefusesAReadOlderThanAWrite(t *testing.T) {
	c := newDocCache()
	old := Document{Text: "old", Revision: Revision("old"), Exists: true}
	c.set("k", old)
	c.drop("k")
	_, ok, gen := c.get("k")
	if ok {
		t.Fatal("a dropped document is cached")
	}
	newer := Document{Text: "new", Revision: Revision("new"), Exists: true}
	c.set("k", newer)      // a write commits while the reader reads
	c.offer("k", old, gen) // the reader's older row
	if got, ok, _ := c.get("k"); !ok || got.Text != "new" {
		t.Fatalf("cached %q, %v; want the written revision", got.Text, ok)
	}
	c.drop("k")
	_, _, gen = c.get("k")
	c.drop("other") // any write path in between
	c.offer("k", old, gen)
	if _, ok, _ := c.get("k"); ok {
		t.Fatal("a read that raced a write was cached")
	}
	_, _, gen = c.get("k")
	c.offer("k", old, gen)
	if got, ok, _ := c.get("k"); !ok || got.Text != "old" {
		t.Fatalf("an undisturbed read was not cached: %q %v", got.Text, ok)
	}
}

// TestDocumentCacheIsBounded fills the cache past its count and its size:
// it keeps the bounds, dropping the least recently used documents first,
// and does not keep a document too large for it.
func TestDocumentCacheIsBounded(t *testing.T) {
	c := newDocCache()
	for i := range docCacheEntries + 50 {
		c.set(fmt.Sprint(i), Document{Text: "x"})
		if i == docCacheEntries-1 {
			c.get("0") // recently used: kept
		}
	}
	if n := c.len(); n != docCacheEntries {
		t.Fatalf("%d documents cached, bound %d", n, docCacheEntries)
	}
	if _, ok, _ := c.get("0"); !ok {
		t.Fatal("the recently used document was dropped")
	}
	if _, ok, _ := c.get("1"); ok {
		t.Fatal("the least recently used document was kept")
	}
	big := strings.Repeat("y", docCacheBytes/8)
	for i := range 20 {
		c.set("big"+fmt.Sprint(i), Document{Text: big})
	}
	if c.bytes > docCacheBytes || c.len() > docCacheEntries {
		t.Fatalf("%d bytes in %d documents, bounds %d and %d", c.bytes, c.len(), docCacheBytes, docCacheEntries)
	}
	c.set("huge", Document{Text: strings.Repeat("z", docCacheBytes/2)})
	if _, ok, _ := c.get("huge"); ok {
		t.Fatal("a document of half the cache was kept")
	}
}

// TestDocumentReadsUnderWrites reads documents while they are written from
// other goroutines (run with -race): once the writers are done, every read
// shows the last revision written.
func TestDocumentReadsUnderWrites(t *testing.T) {
	ctx := context.Background()
	s := newService(t, openStore(t), TrustSettings{})
	targets := []Target{GuildTarget(1), GuildModuleTarget(1, "alpha"), GuildModuleTarget(1, "beta")}
	text := func(i int) string { return fmt.Sprintf("---\nnote: n%d\n---\n", i) }
	guildText := func(i int) string { return fmt.Sprintf("---\nbot_active: true\nstaff_user_ids: [%d]\n---\n", i+1) }
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, tg := range targets {
					if _, err := s.Document(ctx, tg); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	const writes = 30
	for i := range writes {
		mustWrite(t, s, targets[0], guildText(i))
		mustWrite(t, s, targets[1], text(i))
	}
	close(stop)
	wg.Wait()
	if d, _ := s.Document(ctx, targets[0]); d.Text != guildText(writes-1) {
		t.Fatalf("guild reads %q", d.Text)
	}
	if d, _ := s.Document(ctx, targets[1]); d.Text != text(writes-1) {
		t.Fatalf("alpha reads %q", d.Text)
	}
	if d, _ := s.Document(ctx, targets[2]); d.Exists {
		t.Fatalf("beta reads %+v", d)
	}
}

// TestDocumentHitAllocatesLittle: a read of a cached document builds its
// key and nothing else — parsing a valid target quotes nothing (the
// refusal's message is built only for a refusal) and nothing is parsed
// again.
func TestDocumentHitAllocatesLittle(t *testing.T) {
	for _, s := range []string{"guild:42", "guild:42:alpha", "channel:7"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseTarget(s) }); n != 0 {
			t.Errorf("ParseTarget(%q) allocates %v times", s, n)
		}
	}
	ctx := context.Background()
	s := newService(t, openStore(t), TrustSettings{})
	target := GuildModuleTarget(42, "alpha")
	mustWrite(t, s, target, "---\nmode: quiet\n---\n")
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Document(ctx, target) }); n > 1 {
		t.Errorf("a cached Document allocates %v times, want at most 1 (its key)", n)
	}
}

// TestSummaryIsListsRow: Summary answers one guild's row of List exactly,
// after every kind of change, and false for a guild without documents.
func TestSummaryIsListsRow(t *testing.T) {
	ctx := context.Background()
	s := newService(t, openStore(t), TrustSettings{})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nstaff_role_ids: [5, 6]\nstaff_user_ids: [9]\n---\n")
	mustWrite(t, s, GuildTarget(2), "---\nbot_active: false\n---\n")
	mustWrite(t, s, GuildModuleTarget(3, "alpha"), "---\nmode: quiet\n---\n")
	mustWrite(t, s, GuildModuleTarget(1, "beta"), "---\nchannel_id: 4\n---\n")
	check := func() {
		t.Helper()
		list, err := s.List(ctx)
		if err != nil || len(list) != 3 {
			t.Fatalf("List = %+v, %v", list, err)
		}
		for _, row := range list {
			got, ok := s.Summary(row.GuildID)
			if !ok || !reflect.DeepEqual(got, row) {
				t.Fatalf("Summary(%d) = %+v, %v; List's row %+v", row.GuildID, got, ok, row)
			}
		}
		if got, ok := s.Summary(99); ok || !reflect.DeepEqual(got, GuildSummary{GuildID: 99}) {
			t.Fatalf("Summary(99) = %+v, %v", got, ok)
		}
	}
	check()
	if err := s.Delete(ctx, GuildModuleTarget(1, "beta"), Revision("---\nchannel_id: 4\n---\n"), admin); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, GuildTarget(2), "---\nbot_active: true\n---\n")
	check()
}
