package guildcfg

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func boolPtr(b bool) *bool { return &b }

// TestAssistantBlockRules checks the assistant mapping: defaults, every
// value, and each refusal with its message.
func TestAssistantBlockRules(t *testing.T) {
	doc := func(block string) string { return "---\nbot_active: true\n" + block + "---\n" }
	tests := []struct {
		name   string
		block  string
		want   AssistantConfig
		fields map[string]string
	}{
		{name: "absent is the defaults", block: "", want: AssistantConfig{}},
		{name: "explicit member reads as the default", block: "assistant:\n  min_tier: member\n", want: AssistantConfig{}},
		{name: "enabled false kept", block: "assistant:\n  enabled: false\n", want: AssistantConfig{Enabled: boolPtr(false)}},
		{name: "enabled true kept", block: "assistant:\n  enabled: true\n", want: AssistantConfig{Enabled: boolPtr(true)}},
		{name: "enabled null is unset", block: "assistant:\n  enabled: ~\n", want: AssistantConfig{}},
		{name: "regular", block: "assistant:\n  min_tier: regular\n", want: AssistantConfig{MinTier: sdk.TierRegular}},
		{name: "owner", block: "assistant:\n  min_tier: owner\n", want: AssistantConfig{MinTier: sdk.TierStaff, OwnerOnly: true}},
		{name: "tools sorted and deduplicated", block: "assistant:\n  blocked_tools: [zeta, alpha-1, zeta]\n  pinned_tools:\n    - \"B_2\"\n",
			want: AssistantConfig{BlockedTools: []string{"alpha-1", "zeta"}, PinnedTools: []string{"B_2"}}},
		{name: "empty lists are none", block: "assistant:\n  blocked_tools: []\n", want: AssistantConfig{}},
		{name: "daily tokens", block: "assistant:\n  daily_tokens: 250000\n", want: AssistantConfig{DailyTokens: 250000}},
		{name: "daily tokens null is unset", block: "assistant:\n  daily_tokens: ~\n", want: AssistantConfig{}},
		{name: "daily tokens too few", block: "assistant:\n  daily_tokens: 999\n",
			fields: map[string]string{"assistant.daily_tokens": "assistant.daily_tokens must be from 1000 to 1000000000 tokens"}},
		{name: "daily tokens too many", block: "assistant:\n  daily_tokens: 1000000001\n",
			fields: map[string]string{"assistant.daily_tokens": "assistant.daily_tokens must be from 1000 to 1000000000 tokens"}},
		{name: "daily tokens text", block: "assistant:\n  daily_tokens: lots\n",
			fields: map[string]string{"assistant.daily_tokens": "assistant.daily_tokens must be an integer"}},

		{name: "not a mapping", block: "assistant: true\n", fields: map[string]string{"assistant": "assistant must be a mapping of enabled, min_tier, daily_tokens, blocked_tools and pinned_tools"}},
		{name: "bad values", block: "assistant:\n  enabled: yes\n  min_tier: admin\n  blocked_tools: [\"give kudos\"]\n  pinned_tools: give_kudos\n  mode: loud\n",
			fields: map[string]string{
				"assistant.mode":          "unknown setting 'assistant.mode'",
				"assistant.enabled":       "assistant.enabled must be true or false",
				"assistant.min_tier":      "assistant.min_tier must be one of member, regular, staff, owner",
				"assistant.blocked_tools": "assistant.blocked_tools contains an invalid tool name 'give kudos': use 1 to 64 letters, digits, '_' or '-'",
				"assistant.pinned_tools":  "assistant.pinned_tools must be a list of text values",
			}},
		{name: "a number is no tool name", block: "assistant:\n  blocked_tools: [5]\n", fields: map[string]string{"assistant.blocked_tools": "assistant.blocked_tools contains an invalid entry 5"}},
		{name: "65 characters", block: "assistant:\n  pinned_tools: [" + strings.Repeat("a", 65) + "]\n",
			fields: map[string]string{"assistant.pinned_tools": "assistant.pinned_tools contains an invalid tool name '" + strings.Repeat("a", 65) + "': use 1 to 64 letters, digits, '_' or '-'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGuildDocument(doc(tt.block))
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("ParseGuildDocument: %v", err)
				}
				if !reflect.DeepEqual(got.Assistant, tt.want) {
					t.Fatalf("got  %+v\nwant %+v", got.Assistant, tt.want)
				}
				again, err := ParseGuildDocument(RenderGuildDocument(got))
				if err != nil || !reflect.DeepEqual(again, got) {
					t.Fatalf("round trip: %+v, %v", again.Assistant, err)
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

// TestRenderAssistantOnlyWhenSet: the defaults leave the mapping out, and
// enabled is written only when it was set.
func TestRenderAssistantOnlyWhenSet(t *testing.T) {
	if text := RenderGuildDocument(GuildConfig{BotActive: true}); strings.Contains(text, "assistant") {
		t.Fatalf("default config rendered an assistant mapping:\n%s", text)
	}
	text := RenderGuildDocument(GuildConfig{BotActive: true, Assistant: AssistantConfig{MinTier: sdk.TierRegular}})
	if !strings.Contains(text, "assistant:\n  min_tier: regular\n") || strings.Contains(text, "enabled") {
		t.Fatalf("rendered:\n%s", text)
	}
}

// TestChannelDocumentRules: a channel document's tool lists are checked,
// other keys kept unchecked.
func TestChannelDocumentRules(t *testing.T) {
	cfg, err := ParseChannelDocument("---\nblocked_tools: [b, a]\nmode: anything\n---\nbody\n")
	if err != nil || !reflect.DeepEqual(cfg, ChannelConfig{BlockedTools: []string{"a", "b"}, Body: "body\n"}) {
		t.Fatalf("got %+v, %v", cfg, err)
	}
	_, err = ParseChannelDocument("---\npinned_tools: [\"x y\"]\n---\n")
	var verr *ValidationError
	if !errors.As(err, &verr) || !reflect.DeepEqual(verr.Fields(), map[string]string{
		"pinned_tools": "pinned_tools contains an invalid tool name 'x y': use 1 to 64 letters, digits, '_' or '-'"}) || verr.Problems[0].Line != 2 {
		t.Fatalf("err = %#v", err)
	}
	s := newService(t, openStore(t), TrustSettings{})
	if err := s.Validate(ChannelTarget(5), "---\nblocked_tools: 3\n---\n"); !errors.As(err, &verr) {
		t.Fatalf("Validate(channel) = %v, want a refusal", err)
	}
}

// TestAssistantFor: the guild's policy merged with the channel's and, for a
// thread, its parent's documents; allowed_channel_ids judged by the parent;
// an inactive guild answers nothing; the policy follows writes, deletes and
// a reload.
func TestAssistantFor(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	ctx := context.Background()
	if _, ok := s.AssistantFor(1, 10, 0); ok {
		t.Fatal("a guild without a document has a policy")
	}
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nallowed_channel_ids: [10]\nassistant:\n  min_tier: regular\n  blocked_tools: [g_block]\n  pinned_tools: [g_pin, c_block]\n---\nBe kind.\n")
	mustWrite(t, s, ChannelTarget(10), "---\nblocked_tools: [c_block]\npinned_tools: [c_pin]\n---\n")
	mustWrite(t, s, ChannelTarget(11), "---\npinned_tools: [t_pin]\n---\n")
	mustWrite(t, s, GuildTarget(2), "---\nbot_active: false\n---\n")

	check := func(when string, guild, channel, parent uint64, want AssistantPolicy, wantOK bool) {
		t.Helper()
		got, ok := s.AssistantFor(guild, channel, parent)
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: AssistantFor(%d, %d, %d) = %+v, %t\nwant %+v, %t", when, guild, channel, parent, got, ok, want, wantOK)
		}
	}
	base := AssistantPolicy{Enabled: true, MinTier: sdk.TierRegular, AllowedChannelIDs: []uint64{10}, Instructions: "Be kind.\n"}
	inChannel := base
	inChannel.ChannelAllowed, inChannel.BlockedTools, inChannel.PinnedTools = true, []string{"c_block", "g_block"}, []string{"c_pin", "g_pin"}
	check("allowed channel", 1, 10, 0, inChannel, true)
	inThread := inChannel
	inThread.PinnedTools = []string{"c_pin", "g_pin", "t_pin"}
	check("thread of the allowed channel", 1, 11, 10, inThread, true)
	other := base
	other.BlockedTools, other.PinnedTools = []string{"g_block"}, []string{"c_block", "g_pin"}
	check("channel not allowed", 1, 12, 0, other, true)
	check("inactive guild", 2, 10, 0, AssistantPolicy{}, false)

	reloaded := newService(t, st, TrustSettings{})
	if got, _ := reloaded.AssistantFor(1, 11, 10); !reflect.DeepEqual(got, inThread) {
		t.Fatalf("after reload: %+v\nwant %+v", got, inThread)
	}

	doc, err := s.Document(ctx, ChannelTarget(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ChannelTarget(10), doc.Revision, admin); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	other.ChannelAllowed = true
	check("channel document deleted", 1, 10, 0, other, true)

	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nassistant:\n  enabled: false\n  min_tier: owner\n---\n")
	p, _ := s.AssistantFor(1, 99, 0)
	if p.Enabled || !p.OwnerOnly || !p.ChannelAllowed || p.Allows(sdk.TierStaff, false) || !p.Allows(sdk.TierMember, true) {
		t.Fatalf("owner-only, disabled policy: %+v", p)
	}
}

// TestAssistantPolicyAllows: min_tier against each tier, and owner.
func TestAssistantPolicyAllows(t *testing.T) {
	for _, tt := range []struct {
		policy AssistantPolicy
		tier   sdk.TrustTier
		owner  bool
		want   bool
	}{
		{AssistantPolicy{}, sdk.TierMember, false, true},
		{AssistantPolicy{MinTier: sdk.TierRegular}, sdk.TierMember, false, false},
		{AssistantPolicy{MinTier: sdk.TierRegular}, sdk.TierRegular, false, true},
		{AssistantPolicy{MinTier: sdk.TierStaff}, sdk.TierRegular, true, false},
		{AssistantPolicy{MinTier: sdk.TierStaff, OwnerOnly: true}, sdk.TierStaff, false, false},
		{AssistantPolicy{MinTier: sdk.TierStaff, OwnerOnly: true}, sdk.TierMember, true, true},
	} {
		if got := tt.policy.Allows(tt.tier, tt.owner); got != tt.want {
			t.Errorf("%+v.Allows(%s, owner %t) = %t, want %t", tt.policy, tt.tier, tt.owner, got, tt.want)
		}
	}
}

// TestAssistantForDoesNotAllocate: the per-message lookup with no channel
// document adding tools.
func TestAssistantForDoesNotAllocate(t *testing.T) {
	s := newService(t, openStore(t), TrustSettings{})
	mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nassistant:\n  blocked_tools: [a]\n---\nrules\n")
	mustWrite(t, s, ChannelTarget(7), "---\nblocked_tools: [a]\n---\n")
	var ok bool
	if n := testing.AllocsPerRun(1000, func() { _, ok = s.AssistantFor(1, 7, 0) }); n != 0 || !ok {
		t.Fatalf("AssistantFor allocates %v times per run (ok %t)", n, ok)
	}
}

// TestToolWarnings: tools no module declares are warned about, not
// refused; declared and core tools are not.
func TestToolWarnings(t *testing.T) {
	st := openStore(t)
	specs := append(testSpecs(), sdk.Spec{Name: "kudos", Tools: []string{"give_kudos"}})
	s, err := New(context.Background(), st, Options{Modules: specs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	doc := mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\nassistant:\n  blocked_tools: [give_kudos, gone_tool]\n  pinned_tools: [browse_tools]\n---\n")
	want := []FieldError{{Field: "assistant.blocked_tools", Message: `assistant.blocked_tools names "gone_tool", which no module of this build declares; it is kept in case the module is added later`}}
	if !reflect.DeepEqual(doc.Warnings, want) {
		t.Fatalf("guild warnings = %#v\nwant %#v", doc.Warnings, want)
	}
	ch := mustWrite(t, s, ChannelTarget(3), "---\npinned_tools: [nope]\n---\n")
	if len(ch.Warnings) != 1 || ch.Warnings[0].Field != "pinned_tools" {
		t.Fatalf("channel warnings = %#v", ch.Warnings)
	}
}
