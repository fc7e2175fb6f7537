package guildcfg

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Findings of the issue 8 audit, as failing tests (not fixed here).

// TestAudit8NonSpecificTagIsRefused: ParseFrontmatter promises "no ...
// tags", and the scenario tables refuse !yes and !!bool, but the
// non-specific tag "!" passes: go.yaml.in/yaml/v3 does not mark it
// TaggedStyle and resolves the plain scalar as if untagged, so
// "bot_active: ! true" is the boolean true and switches the guild on.
// YAML 1.2 makes "! true" the string "true" (PyYAML, the original's
// reader, resolves it as untagged): readers disagree, which is what the
// strict reader refuses tags for. The same holds for a tagged key,
// sequence or mapping. Each must be refused with nothing stored.
func TestAudit8NonSpecificTagIsRefused(t *testing.T) {
	st := openStore(t)
	s := newService(t, st, TrustSettings{})
	for i, text := range []string{
		"---\nbot_active: ! true\n---\n",
		"---\n! bot_active: true\n---\n",
		"---\nbot_active: true\nstaff_role_ids: ! [1]\n---\n",
		"---\nbot_active: true\nscheduled_tasks: ! {enabled: true}\n---\n",
	} {
		guild := uint64(i + 1) // a guild of its own, so a wrongly stored text cannot hide the next case
		t.Run(strings.ReplaceAll(text, "\n", `\n`), func(t *testing.T) {
			before := counts(t, st)
			_, err := s.Write(context.Background(), GuildTarget(guild), text, EmptyRevision, admin)
			var verr *ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), "YAML tags are not allowed") {
				t.Errorf("Write = %v, want the tag refused", err)
			}
			if after := counts(t, st); after != before {
				t.Errorf("rows %v -> %v: something was stored", before, after)
			}
			if s.Active(guild) {
				t.Error("the guild is active")
			}
		})
	}
}

// TestAudit8ModuleWithoutGuildSettingsIsEnabled: ModuleEnabled is
// documented as "the module's guild predicate: the guild is active and
// the module's settings there are valid". A module without a
// GuildSettingsSchema (gamma) has no settings to be invalid, and the SDK's
// fake (sdktest.FakeGuildSettings.IsEnabled) says such a module is
// enabled in an active guild; the Service says false, so a host that uses
// ModuleEnabled as the predicate would switch every module without guild
// settings off in every guild.
func TestAudit8ModuleWithoutGuildSettingsIsEnabled(t *testing.T) {
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
