package guildcfg

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

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
