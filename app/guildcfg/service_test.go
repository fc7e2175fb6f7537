package guildcfg

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestWriteRefusesBadInput: every bad document is a clear error and stores
// nothing (no document, history or audit row), on a real SQLite file.
func TestWriteRefusesBadInput(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	ctx := context.Background()
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\n---\n")
	before := counts(t, st)

	tests := []struct {
		name    string
		target  string
		text    string
		wantErr string
		field   string // a field that must carry a problem ("" = document)
	}{
		{name: "unknown kind", target: "settings:1", text: "x", wantErr: "unsupported configuration proposal target 'settings:1'"},
		{name: "unknown module", target: "guild:1:nope", text: "", wantErr: "unknown module 'nope'"},
		{name: "module without guild settings", target: "guild:1:gamma", text: "", wantErr: "module 'gamma' has no guild settings"},
		{name: "oversize", target: "channel:5", text: "---\n---\n" + strings.Repeat("x", MaxDocumentBytes), wantErr: MsgTooLarge},
		{name: "not utf-8", target: "channel:5", text: "caf\xe9", wantErr: MsgNotUTF8},
		{name: "invalid yaml", target: "channel:5", text: "---\na: [\n---\n", wantErr: "invalid YAML frontmatter: line 2: did not find expected node content"},
		{name: "anchor", target: "guild:2", text: "---\nbot_active: &a true\n---\n", wantErr: "YAML anchors are not allowed (line 2)"},
		{name: "alias", target: "guild:2:alpha", text: "---\nroles: &r [1]\ntags: *r\n---\n", wantErr: "YAML anchors are not allowed (line 2)"},
		{name: "custom tag", target: "guild:2", text: "---\nbot_active: !!bool true\n---\n", wantErr: "YAML tags are not allowed (!!bool) (line 2)"},
		{name: "duplicate keys", target: "guild:2:alpha", text: "---\nlimit: 1\nlimit: 2\n---\n", wantErr: `duplicate key "limit" (line 3)`},
		{name: "guild without bot_active", target: "guild:2", text: "---\nstaff_role_ids: [1]\n---\n", wantErr: MsgGuildInvalid, field: "bot_active"},
		{name: "signed id", target: "guild:2", text: "---\nbot_active: true\nstaff_role_ids: [-1]\n---\n", wantErr: MsgGuildInvalid, field: "staff_role_ids"},
		{name: "id out of range", target: "guild:2", text: "---\nbot_active: true\nstaff_user_ids: [99999999999999999999]\n---\n", wantErr: MsgGuildInvalid, field: "staff_user_ids"},
		{name: "513 ids", target: "guild:2", text: "---\nbot_active: true\nregular_role_ids: " + idList(513) + "\n---\n", wantErr: MsgGuildInvalid, field: "regular_role_ids"},
		{name: "513 module ids", target: "guild:2:alpha", text: "---\nroles: " + idList(513) + "\n---\n", wantErr: "roles has more than 512 entries", field: "roles"},
		{name: "module body text", target: "guild:2:alpha", text: "---\n---\nbody\n", wantErr: MsgFrontmatterOnly},
		{name: "module unknown key", target: "guild:2:alpha", text: "---\nlimt: 1\n---\n", wantErr: "unknown setting 'limt'", field: "limt"},
		{name: "module validator", target: "guild:2:alpha", text: "---\nmode: loud\n---\n", wantErr: "loud mode needs channel_id"},
		{name: "module required field", target: "guild:2:beta", text: "---\n---\n", wantErr: "channel_id is required", field: "channel_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var target Target
			target, err := ParseTarget(tt.target)
			if err == nil {
				_, err = s.Write(ctx, target, tt.text, EmptyRevision, admin)
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			var verr *ValidationError
			if errors.As(err, &verr) {
				if _, ok := verr.Fields()[tt.field]; !ok {
					t.Fatalf("fields %v lack %q", verr.Fields(), tt.field)
				}
				if verr.Target != tt.target {
					t.Fatalf("error target = %q", verr.Target)
				}
			} else if tt.field != "" {
				t.Fatalf("err %T is not a *ValidationError", err)
			}
			if got := counts(t, st); got != before {
				t.Fatalf("rows (documents, revisions, audit) = %v, want %v: a refused write stored something", got, before)
			}
		})
	}
	if !s.Active(1) || s.Active(2) {
		t.Fatal("refused writes changed activation")
	}
}

func TestWriteCompareAndSwapHistoryAndAudit(t *testing.T) {
	st := openStore(t)
	clock := time.UnixMilli(1_700_000_000_123).UTC()
	s, err := New(context.Background(), st, Options{Modules: testSpecs(), Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	target := GuildTarget(10)

	doc, err := s.Document(ctx, target)
	if err != nil || doc.Exists || doc.Revision != EmptyRevision || doc.Text != "" {
		t.Fatalf("absent document = %+v, %v", doc, err)
	}
	if EmptyRevision != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("EmptyRevision = %s", EmptyRevision)
	}
	v1 := "---\nbot_active: true\n---\nHello\n"
	got, err := s.Write(ctx, target, v1, EmptyRevision, admin)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != Revision(v1) || !got.Exists || got.Guild == nil || !got.Guild.BotActive || got.UpdatedBy != "alice" || !got.UpdatedAt.Equal(clock) {
		t.Fatalf("written = %+v", got)
	}
	// A stale revision is refused with the current document.
	_, err = s.Write(ctx, target, "---\nbot_active: false\n---\n", EmptyRevision, admin)
	var conflict *ConflictError
	if !errors.As(err, &conflict) || err.Error() != MsgConflict || conflict.Current.Text != v1 || conflict.Current.Revision != Revision(v1) {
		t.Fatalf("stale write: %v (%+v)", err, conflict)
	}
	// A short revision is not a revision.
	if _, err := s.Write(ctx, target, "---\nbot_active: false\n---\n", ShortRevision(Revision(v1)), admin); !errors.As(err, &conflict) {
		t.Fatalf("short revision accepted: %v", err)
	}
	v2 := "---\nbot_active: false\n---\nHello\n"
	proposal := Actor{Kind: ActorProposal, Name: "0123456789abcdef0123456789abcdef"}
	if _, err := s.Write(ctx, target, v2, Revision(v1), proposal); err != nil {
		t.Fatal(err)
	}
	// The same text again records nothing.
	c := counts(t, st)
	if _, err := s.Write(ctx, target, v2, Revision(v2), admin); err != nil {
		t.Fatal(err)
	}
	if counts(t, st) != c {
		t.Fatal("an unchanged write recorded rows")
	}
	hist, err := s.History(ctx, target, HistoryPage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Entries) != 2 || hist.Next != 0 {
		t.Fatalf("history = %+v", hist)
	}
	h2, h1 := hist.Entries[0], hist.Entries[1]
	if h2.Actor != "proposal:0123456789abcdef0123456789abcdef" || h2.Kind != ActorProposal || h2.BeforeRevision != Revision(v1) || h2.AfterRevision != Revision(v2) ||
		h2.Text != v2 || h2.BeforeText != v1 || !h2.At.Equal(clock) {
		t.Fatalf("newest entry = %+v", h2)
	}
	if h1.Actor != "alice" || h1.BeforeRevision != EmptyRevision || h1.BeforeText != "" || h1.Text != v1 {
		t.Fatalf("first entry = %+v", h1)
	}
	wantDiff := []Hunk{{BeforeStart: 1, BeforeLines: 4, AfterStart: 1, AfterLines: 4, Lines: []DiffLine{
		{DiffContext, "---"}, {DiffDelete, "bot_active: true"}, {DiffInsert, "bot_active: false"}, {DiffContext, "---"}, {DiffContext, "Hello"}}}}
	if d := h2.Diff(); !reflect.DeepEqual(d, wantDiff) {
		t.Fatalf("diff = %+v", d)
	}

	// Revert to the first revision: a new revision, audited as a revert.
	reverted, err := s.Revert(ctx, target, h1.ID, Revision(v2), Actor{Kind: ActorCLI})
	if err != nil {
		t.Fatal(err)
	}
	if reverted.Text != v1 || !s.Active(10) {
		t.Fatalf("revert = %+v active %t", reverted, s.Active(10))
	}
	if _, err := s.Revert(ctx, target, h1.ID, Revision(v2), admin); !errors.As(err, &conflict) {
		t.Fatalf("stale revert: %v", err)
	}
	if _, err := s.Revert(ctx, GuildTarget(11), h1.ID, EmptyRevision, admin); !errors.Is(err, ErrUnknownHistory) {
		t.Fatalf("revert with another document's history id: %v", err)
	}
	hist, _ = s.History(ctx, target, HistoryPage{})
	if len(hist.Entries) != 3 || !hist.Entries[0].Revert || hist.Entries[0].RevertedFrom != h1.ID || hist.Entries[0].Actor != "cli" {
		t.Fatalf("history after revert = %+v", hist.Entries[0])
	}
	// Paging.
	page, _ := s.History(ctx, target, HistoryPage{Limit: 2})
	if len(page.Entries) != 2 || page.Next != page.Entries[1].ID || page.Entries[1].BeforeText != v1 {
		t.Fatalf("page 1 = %+v", page)
	}
	page2, _ := s.History(ctx, target, HistoryPage{Limit: 2, Before: page.Next})
	if len(page2.Entries) != 1 || page2.Next != 0 || page2.Entries[0].ID != h1.ID {
		t.Fatalf("page 2 = %+v", page2)
	}

	audit, _, err := st.ListAudit(ctx, store.AuditFilter{Action: "guild."})
	if err != nil {
		t.Fatal(err)
	}
	var got3 []string
	for _, e := range audit {
		got3 = append(got3, e.Actor+" "+e.Action+" "+e.Target+" "+e.Detail)
	}
	want3 := []string{
		fmt.Sprintf("cli guild.document.revert guild:10 revision %s -> %s (back to history entry %d), history entry %d", Revision(v2)[:16], Revision(v1)[:16], h1.ID, hist.Entries[0].ID),
		fmt.Sprintf("proposal:0123456789abcdef0123456789abcdef guild.document.save guild:10 revision %s -> %s, history entry %d", Revision(v1)[:16], Revision(v2)[:16], h2.ID),
		fmt.Sprintf("alice guild.document.save guild:10 revision %s -> %s, history entry %d", EmptyRevision[:16], Revision(v1)[:16], h1.ID),
	}
	if !reflect.DeepEqual(got3, want3) {
		t.Fatalf("audit rows:\n%s\nwant\n%s", strings.Join(got3, "\n"), strings.Join(want3, "\n"))
	}
	if audit[2].IP != "127.0.0.1" {
		t.Fatalf("audit ip = %q", audit[2].IP)
	}
}

func TestActorIsRequired(t *testing.T) {
	s := newService(t, openStore(t), TrustSettings{})
	for _, a := range []Actor{{}, {Kind: ActorAdmin}, {Kind: ActorProposal}, {Kind: "robot", Name: "x"}} {
		if _, err := s.Write(context.Background(), GuildTarget(1), "---\nbot_active: true\n---\n", EmptyRevision, a); err == nil {
			t.Errorf("actor %+v accepted", a)
		}
	}
}

// TestActivation covers every activation rule, through real writes.
func TestActivation(t *testing.T) {
	tests := []struct {
		name    string
		docs    map[Target]string
		active  bool
		invalid []string
		blocked []string
		alpha   bool // ModuleEnabled(alpha)
		beta    bool // ModuleEnabled(beta)
	}{
		{name: "no document is inactive", docs: nil, invalid: nil},
		{name: "bot_active true", docs: map[Target]string{GuildTarget(1): "---\nbot_active: true\n---\n"}, active: true, alpha: true, invalid: []string{"beta"}},
		{name: "bot_active false", docs: map[Target]string{GuildTarget(1): "---\nbot_active: false\n---\n"}, invalid: []string{"beta"}},
		{name: "module settings alone do not activate", docs: map[Target]string{GuildModuleTarget(1, "alpha"): "---\nlimit: 2\n---\n"}, invalid: []string{"beta"}},
		{name: "valid settings for both", docs: map[Target]string{
			GuildTarget(1): "---\nbot_active: true\n---\n", GuildModuleTarget(1, "beta"): "---\nchannel_id: 9\n---\n",
		}, active: true, alpha: true, beta: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t, openStore(t), TrustSettings{})
			for target, text := range tt.docs {
				mustWrite(t, s, target, text)
			}
			if s.Active(1) != tt.active || s.ModuleEnabled(1, "alpha") != tt.alpha || s.ModuleEnabled(1, "beta") != tt.beta {
				t.Fatalf("active %t alpha %t beta %t", s.Active(1), s.ModuleEnabled(1, "alpha"), s.ModuleEnabled(1, "beta"))
			}
			list, _ := s.List(context.Background())
			if len(tt.docs) == 0 {
				if len(list) != 0 {
					t.Fatalf("list = %+v", list)
				}
				return
			}
			if len(list) != 1 || list[0].Active != tt.active || !reflect.DeepEqual(list[0].InvalidModules, tt.invalid) || !reflect.DeepEqual(list[0].BlockedBy, tt.blocked) {
				t.Fatalf("list = %+v", list)
			}
		})
	}
}

// TestDisableGuildPolicyFailsClosed: a disable_guild module whose settings
// become invalid (here: its schema now requires a field the stored document
// lacks) takes the guild offline; a disable_module one only itself.
func TestDisableGuildPolicyFailsClosed(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\n---\n")
	mustWrite(t, s, GuildModuleTarget(1, "alpha"), "---\nlimit: 3\n---\n")
	if !s.Active(1) {
		t.Fatal("guild should be active")
	}
	// A new build of alpha requires channel_id.
	specs := testSpecs()
	strict := *specs[0].GuildSettings
	strict.Fields = append([]sdk.GuildSettingField{{Name: "owner_channel", Kind: sdk.GuildSettingID, Required: true}}, strict.Fields...)
	specs[0].GuildSettings = &strict
	s2, err := New(context.Background(), st, Options{Modules: specs})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Active(1) || s2.ModuleEnabled(1, "alpha") {
		t.Fatal("invalid disable_guild settings must take the guild offline")
	}
	ms, ok := s2.ModuleSettings(1, "alpha")
	if !ok || ms.Valid || !reflect.DeepEqual(ms.Errors, []string{"owner_channel is required"}) || ms.Revision != ShortRevision(Revision("---\nlimit: 3\n---\n")) {
		t.Fatalf("settings = %+v", ms)
	}
	list, _ := s2.List(context.Background())
	if !reflect.DeepEqual(list[0].BlockedBy, []string{"alpha"}) || !reflect.DeepEqual(list[0].InvalidModules, []string{"alpha", "beta"}) {
		t.Fatalf("list = %+v", list[0])
	}
	// Another guild without an alpha document is blocked too: its defaults
	// lack the required field.
	mustWrite(t, s2, GuildTarget(2), "---\nbot_active: true\n---\n")
	if s2.Active(2) {
		t.Fatal("defaults missing a required field must block a disable_guild guild")
	}
	// Fixing the document brings the guild back.
	mustWrite(t, s2, GuildModuleTarget(1, "alpha"), "---\nowner_channel: 5\nlimit: 3\n---\n")
	if !s2.Active(1) {
		t.Fatal("fixed settings should reactivate the guild")
	}
}

func TestModuleSettingsDefaultsAndUnknown(t *testing.T) {
	s := newService(t, openStore(t), TrustSettings{})
	ms, ok := s.ModuleSettings(99, "alpha")
	if !ok || !ms.Valid || ms.Revision != "" || ms.Values["limit"] != int64(5) || ms.Values["mode"] != "quiet" {
		t.Fatalf("defaults = %+v, %t", ms, ok)
	}
	if _, ok := s.ModuleSettings(99, "gamma"); ok {
		t.Fatal("a module without guild settings has settings")
	}
	if _, ok := s.ModuleSettings(99, "nope"); ok {
		t.Fatal("an unknown module has settings")
	}
	mustWrite(t, s, GuildModuleTarget(99, "alpha"), "---\nchannel_id: 7\n---\n")
	ms, _ = s.ModuleSettings(99, "alpha")
	if ms.ID("channel_id") != 7 || ms.Revision != ShortRevision(Revision("---\nchannel_id: 7\n---\n")) {
		t.Fatalf("after write = %+v", ms)
	}
	doc, err := s.Document(context.Background(), GuildModuleTarget(99, "alpha"))
	if err != nil || doc.Settings == nil || doc.Settings.ID("channel_id") != 7 || doc.ShortRevision() != ms.Revision {
		t.Fatalf("document = %+v, %v", doc, err)
	}
}

// TestReloadMatchesLiveSnapshot: a Service opened on the same database
// answers exactly as the one that wrote it.
func TestReloadMatchesLiveSnapshot(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nstaff_role_ids: [5]\n---\n")
	mustWrite(t, s, GuildTarget(2), "---\nbot_active: false\n---\n")
	mustWrite(t, s, GuildModuleTarget(1, "beta"), "---\nchannel_id: 3\n---\n")
	mustWrite(t, s, GuildModuleTarget(3, "alpha"), "---\nmode: loud\nchannel_id: 1\n---\n")
	mustWrite(t, s, ChannelTarget(8), "---\ntopic: x\n---\nChannel notes\n")
	s2 := newService(t, st, TrustSettings{})
	l1, _ := s.List(context.Background())
	l2, _ := s2.List(context.Background())
	if !reflect.DeepEqual(l1, l2) || len(l1) != 3 {
		t.Fatalf("live %+v\nreloaded %+v", l1, l2)
	}
	for _, g := range []uint64{1, 2, 3, 4} {
		for _, m := range []string{"alpha", "beta"} {
			a, _ := s.ModuleSettings(g, m)
			b, _ := s2.ModuleSettings(g, m)
			if !reflect.DeepEqual(a, b) || s.ModuleEnabled(g, m) != s2.ModuleEnabled(g, m) {
				t.Fatalf("guild %d module %s: live %+v reloaded %+v", g, m, a, b)
			}
		}
	}
	if !reflect.DeepEqual(s.GuildIDs(), []uint64{1}) || !reflect.DeepEqual(s2.GuildIDs(), []uint64{1}) {
		t.Fatalf("GuildIDs = %v / %v", s.GuildIDs(), s2.GuildIDs())
	}
}

func TestResolveTrust(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{StaffUserIDs: []uint64{100}, StaffRoleIDs: []uint64{200}, RegularRoleIDs: []uint64{300}, OwnerUserID: 900})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nstaff_user_ids: [101]\nstaff_role_ids: [201]\nregular_role_ids: [301]\n---\n")
	// Guild 2's document is invalid: its lists grant nothing.
	if _, err := st.Writer().Exec(`INSERT INTO kimi_documents (target, kind, content, revision, updated_ms, updated_by) VALUES ('guild:2', 'guild', ?, ?, 0, 'test')`,
		"---\nbot_active: maybe\nstaff_user_ids: [102]\n---\n", Revision("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		guild uint64
		user  uint64
		roles []uint64
		want  sdk.TrustTier
	}{
		{"global staff user, unknown member", 1, 100, nil, sdk.TierStaff},
		{"guild staff user, unknown member", 1, 101, nil, sdk.TierStaff},
		{"staff user id wins over roles", 1, 101, []uint64{301}, sdk.TierStaff},
		{"unknown member", 1, 5, nil, sdk.TierMember},
		{"known member without roles", 1, 5, []uint64{}, sdk.TierMember},
		{"global staff role", 1, 5, []uint64{200}, sdk.TierStaff},
		{"guild staff role", 1, 5, []uint64{201}, sdk.TierStaff},
		{"staff role beats regular", 1, 5, []uint64{301, 201}, sdk.TierStaff},
		{"global regular role", 1, 5, []uint64{300}, sdk.TierRegular},
		{"guild regular role", 1, 5, []uint64{301}, sdk.TierRegular},
		{"unrelated roles", 1, 5, []uint64{7, 8}, sdk.TierMember},
		{"guild lists stay in their guild", 3, 101, []uint64{201, 301}, sdk.TierMember},
		{"global lists apply in a guild without a document", 3, 5, []uint64{300}, sdk.TierRegular},
		{"invalid document grants nothing", 2, 102, nil, sdk.TierMember},
		{"global lists apply with an invalid document", 2, 100, nil, sdk.TierStaff},
		{"owner is not implicitly staff", 1, 900, nil, sdk.TierMember},
	}
	for _, tt := range tests {
		if got := s.Resolve(tt.guild, tt.user, tt.roles); got != tt.want {
			t.Errorf("%s: Resolve(%d, %d, %v) = %s, want %s", tt.name, tt.guild, tt.user, tt.roles, got, tt.want)
		}
	}
	if !s.IsOwner(900) || s.IsOwner(100) {
		t.Error("IsOwner")
	}
	if s2 := newService(t, st, TrustSettings{}); s2.IsOwner(0) {
		t.Error("an unset owner must match nobody")
	}
}

func TestSubscribersGetChangesInOrder(t *testing.T) {
	s := newService(t, openStore(t), TrustSettings{})
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	const writes = 30
	cancel := s.Subscribe(func(c Change) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s %t", c.Target, ShortRevision(c.Revision), c.Active))
		if len(got) == writes+2 {
			close(done)
		}
	})
	defer cancel()
	// A panicking subscriber does not stop the others.
	s.Subscribe(func(Change) { panic("subscriber bug") })
	// A subscriber that blocks does not hold up writers.
	block := make(chan struct{})
	defer close(block)
	s.Subscribe(func(Change) { <-block })

	var want []string
	doc := mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\n---\n")
	want = append(want, fmt.Sprintf("guild:1 %s true", doc.ShortRevision()))
	for i := range writes {
		doc = mustWrite(t, s, GuildModuleTarget(1, "alpha"), fmt.Sprintf("---\nlimit: %d\n---\n", i))
		want = append(want, fmt.Sprintf("guild:1:alpha %s true", doc.ShortRevision()))
	}
	doc = mustWrite(t, s, GuildTarget(1), "---\nbot_active: false\n---\n")
	want = append(want, fmt.Sprintf("guild:1 %s false", doc.ShortRevision()))
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("changes not delivered")
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlowSubscriberGetsResync(t *testing.T) {
	sub := newSubscriber(func(Change) {}, nil)
	sub.stop() // no delivery goroutine work: inspect the queue directly
	<-sub.done
	sub.stopped = false
	for i := range maxPendingChanges + 1 {
		sub.push([]Change{{GuildID: uint64(i)}})
	}
	if len(sub.queue) != 1 || !sub.queue[0].Resync {
		t.Fatalf("queue = %d entries, first %+v", len(sub.queue), sub.queue[0])
	}
}

// TestConcurrentCompareAndSwap: 50 goroutines race CAS writes on one
// document. Exactly one writer wins per revision, the history is a complete
// chain, and nothing fails with SQLITE_BUSY.
func TestConcurrentCompareAndSwap(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	ctx := context.Background()
	target := GuildModuleTarget(1, "alpha")
	const workers, attempts = 50, 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[string]int{} // base revision -> winners
	var failures []error
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for a := range attempts {
				cur, err := s.Document(ctx, target)
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
				text := fmt.Sprintf("---\nnote: \"worker %d attempt %d\"\n---\n", w, a)
				_, err = s.Write(ctx, target, text, cur.Revision, Actor{Kind: ActorAdmin, Name: fmt.Sprint("w", w)})
				var conflict *ConflictError
				mu.Lock()
				switch {
				case err == nil:
					wins[cur.Revision]++
				case errors.As(err, &conflict):
				default:
					failures = append(failures, err)
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d writes failed (not conflicts), first: %v", len(failures), failures[0])
	}
	for rev, n := range wins {
		if n != 1 {
			t.Fatalf("revision %s had %d winners", rev, n)
		}
	}
	var all []HistoryEntry
	for before := int64(0); ; {
		page, err := s.History(ctx, target, HistoryPage{Before: before, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Entries...)
		if page.Next == 0 {
			break
		}
		before = page.Next
	}
	t.Logf("%d CAS writes won of %d attempts", len(wins), workers*attempts)
	if len(all) != len(wins) || len(all) < 2 {
		t.Fatalf("%d history entries for %d wins", len(all), len(wins))
	}
	// The chain: oldest starts from nothing, each entry starts where the
	// previous one ended, the newest is the document.
	prev := EmptyRevision
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].BeforeRevision != prev || wins[all[i].BeforeRevision] != 1 {
			t.Fatalf("history entry %d starts at %s, want %s", all[i].ID, all[i].BeforeRevision, prev)
		}
		prev = all[i].AfterRevision
	}
	cur, _ := s.Document(ctx, target)
	if cur.Revision != prev {
		t.Fatalf("document revision %s, history ends at %s", cur.Revision, prev)
	}
	ms, _ := s.ModuleSettings(1, "alpha")
	if ms.Revision != ShortRevision(prev) {
		t.Fatalf("snapshot revision %s, want %s", ms.Revision, ShortRevision(prev))
	}
	var audits int
	if err := st.Reader().QueryRow(`SELECT count(*) FROM kimi_audit_log WHERE action = ?`, ActionDocumentSave).Scan(&audits); err != nil || audits != len(all) {
		t.Fatalf("%d audit rows for %d writes (%v)", audits, len(all), err)
	}
}

// TestHotPathDoesNotAllocate: the lookups the bot makes per event.
func TestHotPathDoesNotAllocate(t *testing.T) {
	s := newService(t, openStore(t), TrustSettings{StaffRoleIDs: []uint64{1}})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nregular_role_ids: [3]\n---\n")
	mustWrite(t, s, GuildModuleTarget(1, "alpha"), "---\nlimit: 2\n---\n")
	roles := []uint64{2, 3}
	var sink bool
	n := testing.AllocsPerRun(1000, func() {
		sink = s.Active(1) && !s.Active(2)
		ms, ok := s.ModuleSettings(1, "alpha")
		sink = sink && ok && ms.Valid
		_, ok = s.ModuleSettings(2, "beta")
		sink = sink && ok
		sink = sink && s.ModuleEnabled(1, "alpha")
		sink = sink && s.Resolve(1, 9, roles) == sdk.TierRegular
	})
	if n != 0 || !sink {
		t.Fatalf("hot path allocates %v times per run (results ok: %t)", n, sink)
	}
}

// TestModuleWithoutGuildSettingsIsEnabled: ModuleEnabled is documented
// as "the module's guild predicate: the guild is active and the module's
// settings there are valid". A module without a GuildSettingsSchema
// (gamma) has no settings to be invalid, so, as the SDK's fake
// (sdktest.FakeGuildSettings.IsEnabled) says, it is enabled in an active
// guild; otherwise a host that uses ModuleEnabled as the predicate would
// switch every module without guild settings off in every guild.
func TestModuleWithoutGuildSettingsIsEnabled(t *testing.T) {
	s := newService(t, openStore(t), TrustSettings{})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\n---\n")
	if !s.Active(1) {
		t.Fatal("guild 1 is not active")
	}
	if !s.ModuleEnabled(1, "gamma") {
		t.Error("ModuleEnabled(active guild, module without guild settings) = false, want true")
	}
	if s.ModuleEnabled(2, "gamma") {
		t.Error("ModuleEnabled(guild without a document, gamma) = true, want false (fail closed)")
	}
	if s.ModuleEnabled(1, "nope") {
		t.Error("ModuleEnabled(active guild, unknown module) = true, want false")
	}
}
