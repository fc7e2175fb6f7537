package guildcfg

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

func idList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(1000 + i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestGuildDocumentRules checks every server-setup rule: the summary is the
// original's message, each problem names its field with the SDK's text.
func TestGuildDocumentRules(t *testing.T) {
	doc := func(lines ...string) string { return "---\n" + strings.Join(lines, "\n") + "\n---\n" }
	tests := []struct {
		name   string
		text   string
		want   GuildConfig
		fields map[string]string // field -> message; nil: valid
	}{
		{name: "minimal active", text: doc("bot_active: true"), want: GuildConfig{BotActive: true, Tasks: TaskPolicy{MinTier: sdk.TierStaff, Timezone: "UTC"}}},
		{name: "everything", text: doc(
			"bot_active: false",
			"staff_user_ids: [11, \"12\"]",
			"staff_role_ids:\n  - 21",
			"regular_role_ids: [31]",
			"allowed_channel_ids: [41, 42]",
			"proposal_channel_id: 51",
			"scheduled_tasks:\n  enabled: true\n  min_tier: regular\n  timezone: Europe/Berlin\n  destinations: [61]",
			"dashboard: {enabled: true}") + "Be kind.\n",
			want: GuildConfig{StaffUserIDs: []uint64{11, 12}, StaffRoleIDs: []uint64{21}, RegularRoleIDs: []uint64{31},
				AllowedChannelIDs: []uint64{41, 42}, ProposalChannelID: 51, Body: "Be kind.\n",
				Tasks: TaskPolicy{Enabled: true, MinTier: sdk.TierRegular, Timezone: "Europe/Berlin", Destinations: []uint64{61}}}},
		{name: "largest snowflake", text: doc("bot_active: true", "staff_user_ids: [18446744073709551615]"),
			want: GuildConfig{BotActive: true, StaffUserIDs: []uint64{18446744073709551615}, Tasks: TaskPolicy{MinTier: sdk.TierStaff, Timezone: "UTC"}}},
		{name: "512 ids are fine", text: doc("bot_active: true", "staff_role_ids: "+idList(512)), want: func() GuildConfig {
			g := GuildConfig{BotActive: true, Tasks: TaskPolicy{MinTier: sdk.TierStaff, Timezone: "UTC"}}
			for i := range 512 {
				g.StaffRoleIDs = append(g.StaffRoleIDs, uint64(1000+i))
			}
			return g
		}()},

		{name: "no document text", text: "", fields: map[string]string{"bot_active": "bot_active is required"}},
		{name: "no frontmatter", text: "bot_active: true\n", fields: map[string]string{"bot_active": "bot_active is required"}},
		{name: "bot_active missing", text: doc("staff_role_ids: [1]"), fields: map[string]string{"bot_active": "bot_active is required"}},
		{name: "bot_active yes is not a boolean", text: doc("bot_active: yes"), fields: map[string]string{"bot_active": "bot_active must be true or false"}},
		{name: "bot_active quoted", text: doc(`bot_active: "true"`), fields: map[string]string{"bot_active": "bot_active must be true or false"}},
		{name: "bot_active number", text: doc("bot_active: 1"), fields: map[string]string{"bot_active": "bot_active must be true or false"}},
		{name: "negative id", text: doc("bot_active: true", "staff_user_ids: [-5]"), fields: map[string]string{"staff_user_ids": "staff_user_ids contains a non-numeric id -5"}},
		{name: "plus-signed id", text: doc("bot_active: true", "staff_role_ids: [+5]"), fields: map[string]string{"staff_role_ids": "staff_role_ids contains a non-numeric id +5"}},
		{name: "quoted signed id", text: doc("bot_active: true", `regular_role_ids: ["-5"]`), fields: map[string]string{"regular_role_ids": "regular_role_ids contains a non-numeric id '-5'"}},
		{name: "id past 64 bits", text: doc("bot_active: true", "staff_role_ids: [18446744073709551616]"), fields: map[string]string{"staff_role_ids": "staff_role_ids contains a non-numeric id 18446744073709551616"}},
		{name: "26-digit id", text: doc("bot_active: true", "staff_role_ids: [12345678901234567890123456]"), fields: map[string]string{"staff_role_ids": "staff_role_ids contains a non-numeric id 12345678901234567890123456"}},
		{name: "float id", text: doc("bot_active: true", "staff_role_ids: [1.5]"), fields: map[string]string{"staff_role_ids": "staff_role_ids contains a non-numeric id 1.5"}},
		{name: "zero id", text: doc("bot_active: true", "staff_role_ids: [0]"), fields: map[string]string{"staff_role_ids": "staff_role_ids contains an invalid id 0"}},
		{name: "513 ids", text: doc("bot_active: true", "staff_role_ids: "+idList(513)), fields: map[string]string{"staff_role_ids": "staff_role_ids has more than 512 entries"}},
		{name: "list is a scalar", text: doc("bot_active: true", "allowed_channel_ids: 5"), fields: map[string]string{"allowed_channel_ids": "allowed_channel_ids must be a list of Discord ids"}},
		{name: "malformed proposal channel voids activation", text: doc("bot_active: true", "proposal_channel_id: general"), fields: map[string]string{"proposal_channel_id": "proposal_channel_id must be a numeric Discord id"}},
		{name: "proposal channel zero", text: doc("bot_active: true", "proposal_channel_id: 0"), fields: map[string]string{"proposal_channel_id": "proposal_channel_id must be a positive Discord id"}},
		{name: "task policy not a mapping", text: doc("bot_active: true", "scheduled_tasks: true"), fields: map[string]string{"scheduled_tasks": "scheduled_tasks must be a mapping of enabled, min_tier, timezone and destinations"}},
		{name: "task policy bad values", text: doc("bot_active: true", "scheduled_tasks:\n  enabled: on\n  min_tier: admin\n  timezone: Mars/Olympus\n  destinations: [x]\n  extra: 1"),
			fields: map[string]string{
				"scheduled_tasks.extra":        "unknown setting 'scheduled_tasks.extra'",
				"scheduled_tasks.enabled":      "scheduled_tasks.enabled must be true or false",
				"scheduled_tasks.min_tier":     "scheduled_tasks.min_tier must be one of member, regular, staff",
				"scheduled_tasks.timezone":     "scheduled_tasks.timezone must be an IANA time zone such as Europe/Berlin",
				"scheduled_tasks.destinations": "scheduled_tasks.destinations contains a non-numeric id 'x'",
			}},
		{name: "several problems at once", text: doc("bot_active: maybe", "staff_user_ids: [a]", "proposal_channel_id: -1"), fields: map[string]string{
			"bot_active":          "bot_active must be true or false",
			"staff_user_ids":      "staff_user_ids contains a non-numeric id 'a'",
			"proposal_channel_id": "proposal_channel_id must be a numeric Discord id",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGuildDocument(tt.text)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("ParseGuildDocument: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got  %+v\nwant %+v", got, tt.want)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || verr.Message != MsgGuildInvalid {
				t.Fatalf("err = %v, want a *ValidationError %q", err, MsgGuildInvalid)
			}
			if !reflect.DeepEqual(verr.Fields(), tt.fields) {
				t.Fatalf("fields = %#v\nwant     %#v", verr.Fields(), tt.fields)
			}
		})
	}
}

func TestGuildDocumentLinesAndSyntax(t *testing.T) {
	_, err := ParseGuildDocument("---\nbot_active: true\nstaff_role_ids: [x]\n---\n")
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) != 1 || verr.Problems[0].Line != 3 {
		t.Fatalf("err = %#v, want one problem on line 3", err)
	}
	// Syntax problems keep their own message: they are not about fields.
	_, err = ParseGuildDocument("---\nbot_active: true\nbot_active: true\n---\n")
	if !errors.As(err, &verr) || verr.Message != `duplicate key "bot_active" (line 3)` {
		t.Fatalf("duplicate key: %v", err)
	}
}

func TestRenderGuildDocumentRoundTrip(t *testing.T) {
	for _, cfg := range []GuildConfig{
		{BotActive: true, Tasks: TaskPolicy{MinTier: sdk.TierStaff, Timezone: "UTC"}},
		{StaffUserIDs: []uint64{1, 18446744073709551615}, StaffRoleIDs: []uint64{2}, RegularRoleIDs: []uint64{3}, AllowedChannelIDs: []uint64{4},
			ProposalChannelID: 5, Body: "# Rules\nbe kind\n",
			Tasks: TaskPolicy{Enabled: true, MinTier: sdk.TierMember, Timezone: "America/New_York", Destinations: []uint64{6, 7}}},
	} {
		text := RenderGuildDocument(cfg)
		got, err := ParseGuildDocument(text)
		if err != nil {
			t.Fatalf("parse of rendered %q: %v", text, err)
		}
		if !reflect.DeepEqual(got, cfg) {
			t.Fatalf("round trip of %q:\ngot  %+v\nwant %+v", text, got, cfg)
		}
	}
}

func alphaSchema() sdk.GuildSettingsSchema { return *testSpecs()[0].GuildSettings }

// TestModuleDocumentRules checks guild-module documents against the SDK's
// exact messages: unknown keys, body text, coercion, the validator.
func TestModuleDocumentRules(t *testing.T) {
	defaults := map[string]any{"channel_id": nil, "enabled": true, "mode": "quiet", "roles": nil, "note": nil, "tags": nil, "limit": int64(5)}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range defaults {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		text   string
		values map[string]any
		errors []string
		fields []string // the field of each error
	}{
		{name: "empty document is the defaults", text: "", values: defaults},
		{name: "empty frontmatter", text: "---\n---\n", values: defaults},
		{name: "trailing blank lines are no body", text: "---\nlimit: 7\n---\n\n  \n", values: with("limit", int64(7))},
		{name: "typed values", text: "---\nchannel_id: 42\nenabled: false\nmode: loud\nroles: [1, \"2\"]\nnote: hi\ntags: [a, b]\nlimit: -3\n---\n",
			values: with("channel_id", uint64(42), "enabled", false, "mode", "loud", "roles", []uint64{1, 2}, "note", "hi", "tags", []string{"a", "b"}, "limit", int64(-3))},
		{name: "body text", text: "---\nlimit: 1\n---\nhello\n", values: defaults, errors: []string{MsgFrontmatterOnly}, fields: []string{""}},
		{name: "text without frontmatter", text: "limit: 1\n", values: defaults, errors: []string{MsgFrontmatterOnly}, fields: []string{""}},
		{name: "unknown keys sorted", text: "---\nzeta: 1\nalpha: 2\n---\n", values: defaults,
			errors: []string{"unknown setting 'alpha'", "unknown setting 'zeta'"}, fields: []string{"alpha", "zeta"}},
		{name: "coercion errors in field order", text: "---\nchannel_id: -1\nenabled: yes\nmode: LOUD\nroles: " + idList(513) + "\nnote: " + strings.Repeat("x", 2001) + "\ntags: [[1]]\nlimit: 1.5\n---\n",
			values: with("channel_id", nil, "enabled", nil, "mode", nil, "roles", nil, "note", nil, "tags", nil, "limit", nil),
			errors: []string{
				"channel_id must be a numeric Discord id", "enabled must be true or false", "mode must be one of quiet, loud",
				"roles has more than 512 entries", "note is longer than 2000 characters", "tags contains an invalid entry [1]", "limit must be an integer",
			},
			fields: []string{"channel_id", "enabled", "mode", "roles", "note", "tags", "limit"}},
		{name: "validator failure", text: "---\nmode: loud\n---\n", values: with("mode", "loud"), errors: []string{"loud mode needs channel_id"}, fields: []string{""}},
		{name: "validator panic", text: "---\nnote: panic\n---\n", values: with("note", "panic"), errors: []string{"validation failed: boom"}, fields: []string{""}},
		{name: "validator skipped after coercion errors", text: "---\nmode: loud\nlimit: x\n---\n", values: with("mode", "loud", "limit", nil),
			errors: []string{"limit must be an integer"}, fields: []string{"limit"}},
		{name: "syntax error keeps defaults", text: "---\nlimit: &a 1\n---\n", values: defaults, errors: []string{"YAML anchors are not allowed (line 2)"}, fields: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, problems := EvaluateModuleDocument(alphaSchema(), tt.text, true)
			if snap.Valid != (len(tt.errors) == 0) || !reflect.DeepEqual(snap.Errors, tt.errors) {
				t.Fatalf("valid %t errors %q\nwant errors %q", snap.Valid, snap.Errors, tt.errors)
			}
			// Values must equal what the SDK's evaluation keeps.
			for k, v := range tt.values {
				if v == nil {
					if got, ok := snap.Values[k]; ok && got != nil {
						t.Errorf("value %s = %#v, want unset", k, got)
					}
					continue
				}
				if !reflect.DeepEqual(snap.Values[k], v) {
					t.Errorf("value %s = %#v, want %#v", k, snap.Values[k], v)
				}
			}
			var fields []string
			for _, p := range problems {
				fields = append(fields, p.Field)
			}
			if !reflect.DeepEqual(fields, tt.fields) {
				t.Fatalf("problem fields = %q, want %q", fields, tt.fields)
			}
			if snap.Revision != Revision(tt.text)[:16] {
				t.Fatalf("revision = %q", snap.Revision)
			}
		})
	}
	if snap, _ := EvaluateModuleDocument(alphaSchema(), "", false); snap.Revision != "" || !snap.Valid {
		t.Fatalf("absent document: %+v", snap)
	}
}

// TestModuleDocumentMatchesFake: the document a module proposes
// (sdk.RenderGuildSettings) evaluates here exactly as sdktest's fake
// evaluates the same values, revision included.
func TestModuleDocumentMatchesFake(t *testing.T) {
	schema := alphaSchema()
	for _, values := range []map[string]any{
		{},
		{"channel_id": uint64(42), "mode": "loud", "roles": []uint64{1, 2}, "note": "line\nwith \"quotes\" and \u2028", "tags": []string{"a", ""}, "limit": int64(9), "enabled": false},
		{"mode": "loud"},                       // validator failure
		{"limit": "x", "unknown": true},        // coercion and unknown key
		{"channel_id": "18446744073709551615"}, // an id given as text
	} {
		fake := sdktest.NewFakeGuildSettings(&schema)
		fake.Set(7, values)
		want, _ := fake.Get(t.Context(), 7)
		text, err := sdk.RenderGuildSettings(values)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := EvaluateModuleDocument(schema, text, true)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("values %v (document %q):\nhost %#v\nfake %#v", values, text, got, want)
		}
	}
}
