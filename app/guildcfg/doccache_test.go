package guildcfg

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
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

// TestSubscriberReadsTheDocumentItIsToldOf: a subscriber told of a
// committed change and reading the document at once (a module's OnChange
// taking a ConfigProposals snapshot) must read the revision the Change
// names, not the one the cache held before the write. The module's
// validator, which the Service runs when it parses the written document
// for the cache, holds the writer once the snapshot is published until the
// subscriber has read, so the order is forced, not hoped for.
func TestSubscriberReadsTheDocumentItIsToldOf(t *testing.T) {
	const first, second = "---\nmode: one\n---\n", "---\nmode: two\n---\n"
	cases := []struct {
		name   string
		change func(s *Service, target Target, rev string) error
		want   string // the revision the read must show
	}{
		{"write", func(s *Service, target Target, rev string) error {
			_, err := s.Write(context.Background(), target, second, rev, admin)
			return err
		}, Revision(second)},
		{"delete", func(s *Service, target Target, rev string) error {
			return s.Delete(context.Background(), target, rev, admin)
		}, EmptyRevision},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var (
				svc    *Service
				armed  atomic.Bool
				before atomic.Pointer[snapshot]
				read   = make(chan string, 1)
			)
			spec := sdk.Spec{Name: "delta", GuildSettings: &sdk.GuildSettingsSchema{
				Fields: []sdk.GuildSettingField{{Name: "mode", Kind: sdk.GuildSettingStr}},
				Validate: func(map[string]any) []string {
					// Once the change is published, wait (bounded) for the
					// subscriber's read before the writer goes on.
					if armed.Load() && svc.snap.Load() != before.Load() && armed.CompareAndSwap(true, false) {
						select {
						case r := <-read:
							read <- r
						case <-time.After(30 * time.Second):
						}
					}
					return nil
				},
			}}
			s, err := New(ctx, openStore(t), Options{Modules: []sdk.Spec{spec}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			svc = s
			target := GuildModuleTarget(7, "delta")
			cur := mustWrite(t, s, target, first)
			if d, err := s.Document(ctx, target); err != nil || d.Revision != Revision(first) {
				t.Fatalf("Document = %+v, %v", d, err) // cached now
			}
			defer s.Subscribe(func(c Change) {
				if c.Target != target {
					return
				}
				d, err := s.Document(ctx, target)
				if err != nil {
					read <- "error: " + err.Error()
					return
				}
				read <- d.Revision
			})()
			before.Store(s.snap.Load())
			armed.Store(true)
			if err := tc.change(s, target, cur.Revision); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-read:
				if got != tc.want {
					t.Fatalf("the subscriber read revision %q on the Change, want %q (the cache still held the old one)", got, tc.want)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the subscriber was never told")
			}
		})
	}
}

// TestDocumentCacheBoundCountsParsedMemory fills the cache with documents
// whose frontmatter is many short keys (stored straight in the table, as a
// restored database may hold them, then reloaded), which take several
// times their text once parsed: the memory the cached entries hold must
// stay within twice what the cache charges for them, and within twice its
// bound, however the documents are shaped.
func TestDocumentCacheBoundCountsParsedMemory(t *testing.T) {
	big := func(prefix string, size int) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "k%d: [%d, %d]\n", i, i, i+1)
		}
		b.WriteString("---\n")
		return b.String()
	}
	cases := []struct {
		name   string
		target func(g uint64) Target
		text   string
	}{
		{"server setup", GuildTarget, big("---\nbot_active: true\n", 150_000)},
		{"module settings", func(g uint64) Target { return GuildModuleTarget(g, "alpha") }, big("---\nmode: quiet\n", 150_000)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t)
			const docs = 12
			for g := uint64(1); g <= docs; g++ {
				target := tc.target(g)
				if _, err := st.Writer().Exec(`INSERT INTO kimi_documents (target, kind, content, revision, updated_ms, updated_by) VALUES (?, ?, ?, ?, 0, 'test')`,
					target.String(), string(target.Kind), tc.text, Revision(tc.text)); err != nil {
					t.Fatal(err)
				}
			}
			s := newService(t, st, TrustSettings{})
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for g := uint64(1); g <= docs; g++ {
				if _, err := s.Document(ctx, tc.target(g)); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
			s.docs.mu.Lock()
			charged, entries := int64(s.docs.bytes), len(s.docs.entries)
			s.docs.mu.Unlock()
			t.Logf("%d documents of %d bytes read: %d cached, charged %d KiB, holding %d KiB", docs, len(tc.text), entries, charged>>10, held>>10)
			if held > 2*charged+1<<20 || held > 2*docCacheBytes {
				t.Fatalf("the cache holds %d KiB in %d entries but charges %d KiB (bound %d KiB)", held>>10, entries, charged>>10, docCacheBytes>>10)
			}
			runtime.KeepAlive(s)
		})
	}
}
