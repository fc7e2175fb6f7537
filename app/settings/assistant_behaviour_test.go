package settings

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

func validBehaviour() AssistantBehaviourUpdate {
	return AssistantBehaviourUpdate{DMMode: DMOff, TurnDeadline: DefaultTurnDeadline, IterationCap: DefaultIterationCap}
}

func behaviourAudit(t *testing.T, st *store.Store) []string {
	t.Helper()
	rows, _, err := st.ListAudit(context.Background(), store.AuditFilter{Action: AuditActionAssistantBehaviour, Limit: store.AuditPageMax})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Detail)
	}
	slices.Reverse(out)
	return out
}

// TestAssistantBehaviourDefaults: an empty store gives DMs off, the
// default persona with the name substituted, 180 s and 12 iterations.
func TestAssistantBehaviourDefaults(t *testing.T) {
	b, err := LoadAssistantBehaviour(context.Background(), openSettingsStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, DefaultAssistantBehaviour()) || b.TurnDeadline != 180*time.Second || b.IterationCap != 12 || b.DMMode != DMOff {
		t.Fatalf("defaults = %+v", b)
	}
	if got := b.PersonaFor("Kimi"); !strings.HasPrefix(got, "You are Kimi, a helpful assistant in this Discord server.") || strings.Contains(got, "{name}") {
		t.Fatalf("PersonaFor = %q", got)
	}
	if b.AllowsDM(1, 1) || b.WantsDMs() {
		t.Fatal("DMs are answered by default")
	}
}

// TestAssistantBehaviourRefusals: each field's bounds, with its message,
// and nothing stored.
func TestAssistantBehaviourRefusals(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*AssistantBehaviourUpdate)
		field string
		msg   string
	}{
		{"unknown DM mode", func(u *AssistantBehaviourUpdate) { u.DMMode = "everyone" }, FieldAssistantDMMode, "Choose off, the owner only, or these users."},
		{"users without ids", func(u *AssistantBehaviourUpdate) { u.DMMode = DMUsers }, FieldAssistantDMUserIDs, "List the Discord user ids"},
		{"a signed id", func(u *AssistantBehaviourUpdate) { u.DMMode, u.DMUserIDs = DMUsers, "+5" }, FieldAssistantDMUserIDs, `"+5" is not a Discord user id`},
		{"id zero", func(u *AssistantBehaviourUpdate) { u.DMMode, u.DMUserIDs = DMUsers, "1\n0" }, FieldAssistantDMUserIDs, `"0" is not a Discord user id`},
		{"id past 64 bits", func(u *AssistantBehaviourUpdate) { u.DMUserIDs = "18446744073709551616" }, FieldAssistantDMUserIDs, "is not a Discord user id"},
		{"letters", func(u *AssistantBehaviourUpdate) { u.DMUserIDs = "bo" }, FieldAssistantDMUserIDs, `"bo" is not a Discord user id`},
		{"persona too long", func(u *AssistantBehaviourUpdate) { u.Persona = strings.Repeat("a", MaxPersonaBytes+1) }, FieldAssistantPersona, "longer than 8000 bytes"},
		{"persona not UTF-8", func(u *AssistantBehaviourUpdate) { u.Persona = "\xff" }, FieldAssistantPersona, "plain UTF-8"},
		{"deadline too short", func(u *AssistantBehaviourUpdate) { u.TurnDeadline = 9 * time.Second }, FieldAssistantTurnDeadline, "from 10 to 1800 (default 180)"},
		{"deadline too long", func(u *AssistantBehaviourUpdate) { u.TurnDeadline = 31 * time.Minute }, FieldAssistantTurnDeadline, "from 10 to 1800"},
		{"no iterations", func(u *AssistantBehaviourUpdate) { u.IterationCap = 0 }, FieldAssistantIterationCap, "from 1 to 200 (default 12)"},
		{"too many iterations", func(u *AssistantBehaviourUpdate) { u.IterationCap = 201 }, FieldAssistantIterationCap, "from 1 to 200"},
		{"name too long", func(u *AssistantBehaviourUpdate) { u.Name = strings.Repeat("é", MaxNameRunes+1) }, FieldAssistantName, "at most 32 characters"},
		{"name on two lines", func(u *AssistantBehaviourUpdate) { u.Name = "Ava\nBot" }, FieldAssistantName, "one line without control"},
		{"name with a tab", func(u *AssistantBehaviourUpdate) { u.Name = "Ava\tBot" }, FieldAssistantName, "one line without control"},
		{"name with a zero-width space", func(u *AssistantBehaviourUpdate) { u.Name = "A\u200bva" }, FieldAssistantName, "invisible characters"},
		{"name not UTF-8", func(u *AssistantBehaviourUpdate) { u.Name = "Av\xffa" }, FieldAssistantName, "plain UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openSettingsStore(t)
			u := validBehaviour()
			tt.edit(&u)
			var checked *Error
			if verr := u.Validate(); !errors.As(verr, &checked) || checked.Fields[tt.field] == "" {
				t.Fatalf("Validate = %v, want a refusal of %s", verr, tt.field)
			}
			_, err := SaveAssistantBehaviour(context.Background(), st, u, Actor{Name: "alice"})
			var se *Error
			if !errors.As(err, &se) || !strings.Contains(se.Fields[tt.field], tt.msg) {
				t.Fatalf("err = %v, want %s: %q", err, tt.field, tt.msg)
			}
			if len(se.Fields) != 1 {
				t.Fatalf("fields %v, want only %s", se.Fields, tt.field)
			}
			if a := behaviourAudit(t, st); len(a) != 0 {
				t.Fatalf("refusal audited: %v", a)
			}
		})
	}
}

// TestAssistantBehaviourSaveLoadAudit: a save round-trips through the
// store, is audited by what changed (never the persona's text), and the DM
// gate follows the mode.
func TestAssistantBehaviourSaveLoadAudit(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	u := AssistantBehaviourUpdate{DMMode: DMUsers, DMUserIDs: "30, 10\n20 10", Persona: "  You are {name}, a pirate.\r\nSay arr.  ",
		TurnDeadline: 5 * time.Minute, IterationCap: 40}
	saved, err := SaveAssistantBehaviour(ctx, st, u, Actor{Name: "alice", IP: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	want := AssistantBehaviour{DMMode: DMUsers, DMUserIDs: []uint64{10, 20, 30}, Persona: "You are {name}, a pirate.\nSay arr.",
		TurnDeadline: 5 * time.Minute, IterationCap: 40}
	loaded, err := LoadAssistantBehaviour(ctx, st)
	if err != nil || !reflect.DeepEqual(saved, want) || !reflect.DeepEqual(loaded, want) {
		t.Fatalf("saved %+v, loaded %+v (%v), want %+v", saved, loaded, err, want)
	}
	if loaded.PersonaFor("Kimi") != "You are Kimi, a pirate.\nSay arr." || !loaded.AllowsDM(20, 0) || loaded.AllowsDM(40, 40) || !loaded.WantsDMs() {
		t.Fatalf("behaviour %+v answers the wrong DMs or persona", loaded)
	}
	if _, err := SaveAssistantBehaviour(ctx, st, AssistantBehaviourUpdate{DMMode: DMOwner, Persona: DefaultPersona,
		TurnDeadline: 5 * time.Minute, IterationCap: 40}, Actor{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	owner, _ := LoadAssistantBehaviour(ctx, st)
	if owner.Persona != "" || !owner.AllowsDM(7, 7) || owner.AllowsDM(7, 0) || owner.AllowsDM(8, 7) {
		t.Fatalf("owner-only behaviour %+v", owner)
	}
	if _, err := SaveAssistantBehaviour(ctx, st, AssistantBehaviourUpdate{DMMode: DMOwner, TurnDeadline: 5 * time.Minute, IterationCap: 40}, Actor{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	got := behaviourAudit(t, st)
	wantAudit := []string{
		"direct messages users; direct-message users 3; persona changed; turn deadline 5m0s; iteration cap 40",
		"direct messages owner; direct-message users 0; persona default",
		"saved, nothing changed",
	}
	if !reflect.DeepEqual(got, wantAudit) {
		t.Fatalf("audit = %q\nwant %q", got, wantAudit)
	}
	for _, d := range got {
		if strings.Contains(d, "pirate") {
			t.Fatalf("audit shows the persona: %q", d)
		}
	}
}

// TestAssistantBehaviourName: the name is trimmed, 1 to 32 characters
// (runes, not bytes) or empty for the bot's own names; it is stored,
// audited by value, substituted into the persona, and a blank save
// removes it.
func TestAssistantBehaviourName(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, typed, want, persona string
	}{
		{"empty is the bot's names", "", "", "You are Kimi, a helpful"},
		{"spaces only is empty", "   ", "", "You are Kimi, a helpful"},
		{"trimmed", "  Ava  ", "Ava", "You are Ava, a helpful"},
		{"32 characters of UTF-8", strings.Repeat("é", MaxNameRunes), strings.Repeat("é", MaxNameRunes), "You are " + strings.Repeat("é", MaxNameRunes) + ","},
		{"inner spaces and punctuation", "Kimi Bot-2", "Kimi Bot-2", "You are Kimi Bot-2, a helpful"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openSettingsStore(t)
			u := validBehaviour()
			u.Name = tc.typed
			saved, err := SaveAssistantBehaviour(ctx, st, u, Actor{Name: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := LoadAssistantBehaviour(ctx, st)
			if err != nil || saved.Name != tc.want || loaded.Name != tc.want {
				t.Fatalf("saved %q, loaded %q (%v), want %q", saved.Name, loaded.Name, err, tc.want)
			}
			if got := loaded.PersonaFor("Kimi"); !strings.HasPrefix(got, tc.persona) {
				t.Fatalf("PersonaFor = %q, want the prefix %q", got, tc.persona)
			}
			if got := loaded.NameOr("Kimi"); got != cmp.Or(tc.want, "Kimi") {
				t.Fatalf("NameOr = %q", got)
			}
		})
	}
	st := openSettingsStore(t)
	u := validBehaviour()
	u.Name = "Ava"
	for _, name := range []string{"Ava", "Ava", ""} {
		u.Name = name
		if _, err := SaveAssistantBehaviour(ctx, st, u, Actor{Name: "bob"}); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := st.Reader().QueryRow(`SELECT count(*) FROM kimi_settings WHERE key = ?`, SettingAssistantName).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a blank name left %d rows (%v)", n, err)
	}
	if got, want := behaviourAudit(t, st), []string{`assistant name "Ava"`, "saved, nothing changed", "assistant name default"}; !slices.Equal(got, want) {
		t.Fatalf("audit = %q, want %q", got, want)
	}
	// A stored value another program wrote out of bounds is the default.
	if err := st.SetSetting(ctx, SettingAssistantName, strings.Repeat("x", MaxNameRunes+1)); err != nil {
		t.Fatal(err)
	}
	if b, err := LoadAssistantBehaviour(ctx, st); err != nil || b.Name != "" {
		t.Fatalf("an out-of-bounds stored name loads as %q (%v)", b.Name, err)
	}
}

// TestAssistantBehaviourValidateAcceptsAValidUpdate: Validate refuses
// only what SaveAssistantBehaviour refuses.
func TestAssistantBehaviourValidateAcceptsAValidUpdate(t *testing.T) {
	u := validBehaviour()
	u.DMMode, u.DMUserIDs, u.Persona = DMUsers, "5, 7", "You are {name}."
	if err := u.Validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
}
