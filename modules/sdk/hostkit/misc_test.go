package hostkit

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/pyrepr"
)

func TestHealth(t *testing.T) {
	order := []sdk.HealthState{sdk.HealthHealthy, sdk.HealthStarting, sdk.HealthDegraded, sdk.HealthFailed}
	for i, s := range order {
		if s.Rank() != i || !s.Valid() {
			t.Errorf("%s rank %d", s, s.Rank())
		}
	}
	if sdk.HealthState("odd").Valid() {
		t.Error("unknown state valid")
	}
	if WorstHealthState() != sdk.HealthHealthy || WorstHealthState(sdk.HealthStarting, sdk.HealthFailed, sdk.HealthDegraded) != sdk.HealthFailed {
		t.Error("WorstHealthState")
	}
	if !ClearsKey(sdk.HealthHealthy, "", nil) || ClearsKey(sdk.HealthHealthy, "x", nil) || ClearsKey(sdk.HealthHealthy, "", map[string]float64{"a": 1}) || ClearsKey(sdk.HealthDegraded, "", nil) {
		t.Error("ClearsKey")
	}
	if got := BoundHealthDetail(strings.Repeat("é", 600)); len([]rune(got)) != 500 {
		t.Errorf("detail length %d", len([]rune(got)))
	}
	if BoundHealthDetail("short") != "short" {
		t.Error("short detail changed")
	}
	metrics := map[string]float64{
		"api_token": 1, "Secret_count": 1, "KEYS": 1, "password": 1, "credentials": 1,
		"nan": math.NaN(), "inf": math.Inf(1), strings.Repeat("m", 70): 2, "ok": 3,
	}
	for i := 0; i < 40; i++ {
		metrics["z"+strings.Repeat("x", i)] = float64(i)
	}
	got := BoundHealthMetrics(metrics)
	if len(got) != sdk.MaxHealthMetrics {
		t.Fatalf("kept %d metrics", len(got))
	}
	for name := range got {
		if isSecretMetric(name) || len(name) > sdk.MaxHealthMetricNameLength {
			t.Errorf("kept %q", name)
		}
	}
	if got["ok"] != 3 || got[strings.Repeat("m", 64)] != 2 {
		t.Errorf("lost metrics: %v", got)
	}
	if _, ok := got["nan"]; ok {
		t.Error("kept NaN")
	}
	// Two names that truncate to the same 64 characters keep the first.
	dup := BoundHealthMetrics(map[string]float64{strings.Repeat("a", 65): 1, strings.Repeat("a", 66): 2})
	if len(dup) != 1 || dup[strings.Repeat("a", 64)] != 1 {
		t.Errorf("dup = %v", dup)
	}
}

func TestTrustTier(t *testing.T) {
	if !(sdk.TierMember < sdk.TierRegular && sdk.TierRegular < sdk.TierStaff) {
		t.Fatal("order")
	}
	for _, tier := range []sdk.TrustTier{sdk.TierMember, sdk.TierRegular, sdk.TierStaff} {
		parsed, err := sdk.ParseTrustTier(tier.String())
		if err != nil || parsed != tier {
			t.Errorf("round trip %s", tier)
		}
		b, err := json.Marshal(tier)
		if err != nil || string(b) != `"`+tier.String()+`"` {
			t.Errorf("marshal %s: %s %v", tier, b, err)
		}
		var back sdk.TrustTier
		if err := json.Unmarshal(b, &back); err != nil || back != tier {
			t.Errorf("unmarshal %s", b)
		}
	}
	_, err := sdk.ParseTrustTier("admin")
	checkErr(t, err, "unknown trust tier 'admin'")
	var bad sdk.TrustTier
	if err := json.Unmarshal([]byte(`"admin"`), &bad); err == nil {
		t.Error("unmarshal admin")
	}
	if _, err := json.Marshal(sdk.TrustTier(0)); err == nil {
		t.Error("marshal unset tier")
	}
	if sdk.TrustTier(0).String() != "" || sdk.TrustTier(0).Valid() || sdk.TrustTier(4).Valid() {
		t.Error("unset tier")
	}
	if sdk.TrustTier(0).Or(sdk.TierStaff) != sdk.TierStaff || sdk.TierRegular.Or(sdk.TierStaff) != sdk.TierRegular {
		t.Error("Or")
	}
	if !sdk.TierStaff.AtLeast(sdk.TierRegular) || sdk.TierMember.AtLeast(sdk.TierRegular) {
		t.Error("AtLeast")
	}
}

func TestSettingsDefinition(t *testing.T) {
	def := sdk.SettingsDefinition{Label: "Kudos", Fields: []sdk.SettingField{
		{Name: "daily_limit", Kind: sdk.SettingInt, Default: 5, Min: 1, HasMin: true},
		{Name: "ratio", Kind: sdk.SettingFloat, Default: 0.5},
		{Name: "mode", Kind: sdk.SettingString, Default: "fast", Choices: []string{"fast", "slow"}},
		{Name: "enabled", Kind: sdk.SettingBool, Default: false},
		{Name: "api_key", Kind: sdk.SettingString, Secret: true},
	}}
	checkErr(t, def.Validate("reference_kudos"), "")
	s, err := def.Prepare("reference_kudos", map[string]string{"daily_limit": " 9 ", "enabled": "yes", "api_key": "k", "ratio": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Int("daily_limit") != 9 || !s.Bool("enabled") || s.String("mode") != "fast" || s.Float("ratio") != 2 || s.Float("daily_limit") != 9 || s.String("api_key") != "k" {
		t.Fatalf("prepared: %+v", s)
	}
	if strings.Join(s.Names(), ",") != "api_key,daily_limit,enabled,mode,ratio" {
		t.Errorf("Names = %v", s.Names())
	}
	if f, _ := def.Field("api_key"); f.Exposed() {
		t.Error("secret exposed")
	}
	if f, _ := def.Field("mode"); !f.Exposed() {
		t.Error("mode not exposed")
	}
	prepErrs := []struct {
		raw  map[string]string
		want string
	}{
		{map[string]string{}, "module 'reference_kudos' setting 'api_key' is required"},
		{map[string]string{"api_key": "k", "nope": "1"}, "module 'reference_kudos' has no setting 'nope'"},
		{map[string]string{"api_key": "k", "daily_limit": "0"}, "module 'reference_kudos' setting 'daily_limit': must be at least 1"},
		{map[string]string{"api_key": "k", "daily_limit": "x"}, "module 'reference_kudos' setting 'daily_limit': must be an integer"},
		{map[string]string{"api_key": "k", "ratio": "x"}, "module 'reference_kudos' setting 'ratio': must be a number"},
		{map[string]string{"api_key": "k", "ratio": "NaN"}, "module 'reference_kudos' setting 'ratio': must be a finite number"},
		{map[string]string{"api_key": "k", "enabled": "maybe"}, "module 'reference_kudos' setting 'enabled': must be true or false"},
		{map[string]string{"api_key": "k", "mode": "medium"}, "module 'reference_kudos' setting 'mode': must be one of fast, slow"},
	}
	for _, pe := range prepErrs {
		_, err := def.Prepare("reference_kudos", pe.raw)
		checkErr(t, err, pe.want)
	}
	defErrs := []struct {
		f    sdk.SettingField
		want string
	}{
		{sdk.SettingField{Name: "Bad", Kind: sdk.SettingInt}, "module 'm' setting 'Bad' has an invalid name"},
		{sdk.SettingField{Name: "a", Kind: "list"}, "module 'm' setting 'a' has unsupported kind 'list'"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingBool, HasMin: true}, "module 'm' setting 'a' has a minimum but is not numeric"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingInt, Choices: []string{"1"}}, "module 'm' setting 'a' has choices but is not str"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingFloat, Default: "x"}, "module 'm' setting 'a' has an invalid default: must be a number"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingFloat, Default: -1.0, Min: 0, HasMin: true}, "module 'm' setting 'a' has an invalid default: must be at least 0"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingBool, Default: 1}, "module 'm' setting 'a' has an invalid default: must be true or false"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingString, Default: 1}, "module 'm' setting 'a' has an invalid default: must be text"},
		{sdk.SettingField{Name: "a", Kind: sdk.SettingInt, Default: uint64(math.MaxUint64)}, "module 'm' setting 'a' has an invalid default: must be an integer"},
	}
	for _, de := range defErrs {
		checkErr(t, sdk.SettingsDefinition{Fields: []sdk.SettingField{de.f}}.Validate("m"), de.want)
	}
	checkErr(t, sdk.SettingsDefinition{Fields: []sdk.SettingField{{Name: "a", Kind: sdk.SettingInt}, {Name: "a", Kind: sdk.SettingInt}}}.Validate("m"), "module 'm' declares setting 'a' twice")
	if SettingEnvName("reference-kudos", "daily_limit") != "REFERENCE_KUDOS_DAILY_LIMIT" {
		t.Error("SettingEnvName")
	}
	ns := sdk.NewSettings(map[string]any{"n": 3, "f": float32(1.5), "s": "x"})
	if ns.Int("n") != 3 || ns.Float("s") != 0 || ns.String("n") != "" {
		t.Error("NewSettings normalization")
	}
	if v, ok := ns.Lookup("s"); !ok || v != "x" {
		t.Error("Lookup")
	}
	var zero sdk.Settings
	if zero.Int("x") != 0 || len(zero.Names()) != 0 {
		t.Error("zero settings")
	}
}

func TestAsInt64(t *testing.T) {
	for _, v := range []any{int(1), int8(1), int16(1), int32(1), int64(1), uint8(1), uint16(1), uint32(1), uint(1), uint64(1)} {
		if n, ok := pyrepr.AsInt64(v); !ok || n != 1 {
			t.Errorf("%T", v)
		}
	}
	for _, v := range []any{true, 1.0, "1", uint64(math.MaxUint64), uint(math.MaxUint64)} {
		if _, ok := pyrepr.AsInt64(v); ok {
			t.Errorf("%T %v accepted", v, v)
		}
	}
}

func TestErrorTypes(t *testing.T) {
	u := NewUndeclaredDiscordActionError("reference_kudos", sdk.ActionSendDM)
	checkErr(t, u, "module 'reference_kudos' did not declare Discord action 'send_dm'")
	var got *sdk.UndeclaredDiscordActionError
	if !errors.As(error(u), &got) || got.Action != sdk.ActionSendDM || got.Module != "reference_kudos" {
		t.Error("errors.As UndeclaredDiscordActionError")
	}
	wrapped := errors.Join(errors.New("context"), u)
	if !errors.Is(wrapped, sdk.ErrContract) || !errors.As(wrapped, &got) {
		t.Error("wrapped contract error lost")
	}
	cause := errors.New("cause")
	mce := &sdk.ModuleContractError{Message: "m", Err: cause}
	if !errors.Is(mce, cause) {
		t.Error("cause")
	}
	sync := &sdk.CommandSyncError{}
	if sync.Error() != "Discord did not accept a live guild-command synchronization" || (&sdk.CommandSyncError{Message: "x", Err: cause}).Error() != "x" || !errors.Is(&sdk.CommandSyncError{Err: cause}, cause) {
		t.Error("CommandSyncError")
	}
	if (&sdk.ProposalError{Message: "p"}).Error() != "p" {
		t.Error("ProposalError")
	}
	fe := &sdk.FileAccessError{Code: sdk.FileTooLarge, Message: "file is larger than max_bytes"}
	if !errors.Is(fe, &sdk.FileAccessError{Code: sdk.FileTooLarge}) || errors.Is(fe, &sdk.FileAccessError{Code: sdk.FileExpired}) || errors.Is(fe, sdk.ErrContract) || fe.Error() != "file is larger than max_bytes" {
		t.Error("FileAccessError")
	}
	err := ValidateFileReadLimit(0)
	var fae *sdk.FileAccessError
	if !errors.As(err, &fae) || fae.Code != sdk.FileInvalidLimit {
		t.Errorf("ValidateFileReadLimit: %v", err)
	}
	if ValidateFileReadLimit(1) != nil {
		t.Error("limit 1")
	}
}

func TestTools(t *testing.T) {
	handler := sdk.ToolHandler(nil)
	checkErr(t, ValidateTool(sdk.Tool{Name: "give_kudos", Description: "d", Handler: handler}), "tool 'give_kudos' needs a handler")
	checkErr(t, ValidateTool(sdk.Tool{}), "a tool needs a name")
	checkErr(t, ValidateTool(sdk.Tool{Name: "x"}), "tool 'x' needs a description")
	ok := sdk.Tool{Name: "x", Description: "d", Handler: func(_ context.Context, _ sdk.ToolContext, _ json.RawMessage) (string, error) { return "", nil }}
	checkErr(t, ValidateTool(ok), "")
	ok.MinTier = 7
	checkErr(t, ValidateTool(ok), "tool 'x' has an invalid min_tier")
	ok.MinTier = 0
	for _, tt := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"give_kudos-2", nil, ""},
		{strings.Repeat("a", 64), map[string]any{"type": "object"}, ""},
		{strings.Repeat("a", 65), nil, "invalid tool name '" + strings.Repeat("a", 65) + "': use 1 to 64 letters, digits, '_' or '-'"},
		{"kudos.give", nil, "invalid tool name 'kudos.give': use 1 to 64 letters, digits, '_' or '-'"},
		{"give kudos", nil, "invalid tool name 'give kudos': use 1 to 64 letters, digits, '_' or '-'"},
		{"k\u00e9", nil, "invalid tool name 'k\u00e9': use 1 to 64 letters, digits, '_' or '-'"},
		{"x", map[string]any{"type": "string"}, `tool 'x' parameters must be a JSON object schema ("type": "object")`},
		{"x", map[string]any{"properties": map[string]any{}}, `tool 'x' parameters must be a JSON object schema ("type": "object")`},
		{"x", map[string]any{}, `tool 'x' parameters must be a JSON object schema ("type": "object")`},
	} {
		ok.Name, ok.Parameters = tt.name, tt.params
		checkErr(t, ValidateTool(ok), tt.want)
	}
	if (sdk.Tool{}).EffectiveMinTier() != sdk.TierMember {
		t.Error("tool default tier")
	}
	checkErr(t, NewToolsSealed("x"), "tool 'x' cannot be registered after module loading; register tools from ModuleSpec.create(), not start()")
}

func TestDiscordHelpers(t *testing.T) {
	checkErr(t, sdk.HistoryQuery{After: 1, Before: 2}.Validate(), "message history accepts either after or before, not both")
	checkErr(t, sdk.HistoryQuery{After: 1}.Validate(), "")
	for limit, want := range map[int]int{0: 100, -5: 1, 1: 1, 50: 50, 100: 100, 101: 100} {
		if got := (sdk.HistoryQuery{Limit: limit}).ClampedLimit(); got != want {
			t.Errorf("ClampedLimit(%d) = %d", limit, got)
		}
	}
	if got := AuditReason("mod", "  spam \n and   abuse "); got != "[mod] spam and abuse" {
		t.Errorf("AuditReason = %q", got)
	}
	long := AuditReason("mod", strings.Repeat("é", 600))
	if len([]rune(long)) != sdk.MaxAuditReasonLength || !strings.HasPrefix(long, "[mod] é") {
		t.Errorf("long reason length %d", len([]rune(long)))
	}
	if AuditReason("mod", "") != "[mod]" {
		t.Errorf("empty reason %q", AuditReason("mod", ""))
	}
}

func TestEventGuildID(t *testing.T) {
	ref := sdk.MessageRef{GuildID: 100, ChannelID: 2, MessageID: 3}
	tests := []struct {
		payload any
		want    uint64
	}{
		{sdk.MessageEvent{Message: sdk.MessageSnapshot{Ref: ref}}, 100},
		{sdk.MessageEditEvent{Ref: ref}, 100},
		{sdk.MessageDeleteEvent{Ref: ref}, 100},
		{sdk.MessageBulkDeleteEvent{Refs: []sdk.MessageRef{ref}}, 100},
		{sdk.MessageBulkDeleteEvent{}, 0},
		{sdk.InviteCreateEvent{Invite: sdk.InviteSnapshot{GuildID: 100}}, 100},
		{sdk.InviteDeleteEvent{Invite: sdk.InviteSnapshot{GuildID: 100}}, 100},
		{sdk.MemberJoinEvent{Member: sdk.MemberSnapshot{GuildID: 100}}, 100},
		{sdk.MemberRemoveEvent{GuildID: 100}, 100},
		{sdk.MemberUpdateEvent{GuildID: 100}, 100},
		{sdk.AuditLogEntryEvent{GuildID: 100}, 100},
		{customGuild{}, 42},
		{"text", 0},
	}
	for _, tt := range tests {
		if got := EventGuildID(tt.payload); got != tt.want {
			t.Errorf("EventGuildID(%T) = %d", tt.payload, got)
		}
	}
	if len(CoreTopics()) != 10 {
		t.Fatal("core topics")
	}
	for _, topic := range CoreTopics() {
		if ns, _, err := SplitTopic(topic, false); err != nil || ns != sdk.CoreTopicPrefix {
			t.Errorf("core topic %s: %v", topic, err)
		}
	}
}

type customGuild struct{}

func (customGuild) EventGuildID() uint64 { return 42 }

func TestProposalTargetsAndResults(t *testing.T) {
	if sdk.GuildTarget(100) != "guild:100" || sdk.ChannelTarget(5) != "channel:5" || sdk.GuildModuleTarget(100, "reference_kudos") != "guild:100:reference_kudos" {
		t.Error("targets")
	}
	r := sdk.ScheduledResult{Messages: []sdk.ScheduledResultMessage{
		{Attachments: []sdk.ScheduledResultAttachment{{ID: "a"}, {ID: "b"}}},
		{Attachments: []sdk.ScheduledResultAttachment{{ID: "c"}}},
	}}
	if strings.Join(r.AttachmentIDs(), ",") != "a,b,c" {
		t.Error("AttachmentIDs")
	}
	c := r.Clone()
	c.Messages[0].Attachments[0].ID = "changed"
	c.Messages[1].Content = "changed"
	if r.Messages[0].Attachments[0].ID != "a" || r.Messages[1].Content != "" {
		t.Errorf("Clone shares memory with the original: %+v", r.Messages)
	}
	if c.Messages[0].Attachments[1].ID != "b" || len(c.Messages) != 2 {
		t.Errorf("Clone lost data: %+v", c.Messages)
	}
	if len(DiscordCDNHosts()) != 2 || len(BaselineCapabilities()) != 2 {
		t.Error("constants")
	}
	_ = time.Second
}

func TestAggregateHealth(t *testing.T) {
	empty := AggregateHealth()
	if empty.State != sdk.HealthHealthy || empty.Detail != "" || empty.Metrics == nil {
		t.Fatalf("empty: %+v", empty)
	}
	t1, t2 := time.Unix(10, 0), time.Unix(20, 0)
	got := AggregateHealth(
		sdk.ModuleHealth{State: sdk.HealthHealthy, Detail: "fine", Metrics: map[string]float64{"guilds": 1}, UpdatedAt: t1},
		sdk.ModuleHealth{State: sdk.HealthDegraded, Detail: "1 guild digest(s) failed", Metrics: map[string]float64{"digest_failures": 1}, UpdatedAt: t2},
		sdk.ModuleHealth{State: sdk.HealthDegraded, Detail: "1 guild digest(s) failed"},
		sdk.ModuleHealth{State: sdk.HealthDegraded, Detail: "Scheduled results: 1 blocked, 0 retrying", Metrics: map[string]float64{"guilds": 2}},
	)
	if got.State != sdk.HealthDegraded || got.Detail != "1 guild digest(s) failed; Scheduled results: 1 blocked, 0 retrying" {
		t.Fatalf("aggregate: %+v", got)
	}
	if got.Metrics["guilds"] != 2 || got.Metrics["digest_failures"] != 1 || !got.UpdatedAt.Equal(t2) {
		t.Fatalf("metrics/time: %+v", got)
	}
	long := AggregateHealth(sdk.ModuleHealth{State: sdk.HealthFailed, Detail: strings.Repeat("x", 400)}, sdk.ModuleHealth{State: sdk.HealthFailed, Detail: strings.Repeat("y", 400)})
	if len(long.Detail) != sdk.MaxHealthDetailLength {
		t.Fatalf("detail length %d", len(long.Detail))
	}
}

func TestProposalValidate(t *testing.T) {
	tests := []struct {
		name string
		p    sdk.Proposal
		want string
	}{
		{"ok", sdk.Proposal{Summary: " s ", Content: strings.Repeat("x", sdk.MaxProposalContentBytes)}, ""},
		{"longest summary", sdk.Proposal{Summary: strings.Repeat("é", sdk.MaxProposalSummaryLength)}, ""},
		{"blank summary", sdk.Proposal{Summary: " \n "}, "proposal summary must be 1-1000 characters"},
		{"long summary", sdk.Proposal{Summary: strings.Repeat("é", sdk.MaxProposalSummaryLength+1)}, "proposal summary must be 1-1000 characters"},
		{"huge content", sdk.Proposal{Summary: "s", Content: strings.Repeat("x", sdk.MaxProposalContentBytes+1)}, "configuration fragment exceeds the 1 MB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var pe *sdk.ProposalError
			if !errors.As(err, &pe) || pe.Message != tt.want {
				t.Fatalf("got %v, want ProposalError %q", err, tt.want)
			}
		})
	}
}
