package guildcfg

import (
	"context"
	"log/slog"
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
