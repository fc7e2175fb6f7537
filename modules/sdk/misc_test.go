package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	order := []HealthState{HealthHealthy, HealthStarting, HealthDegraded, HealthFailed}
	for i, s := range order {
		if s.Rank() != i || !s.Valid() {
			t.Errorf("%s rank %d", s, s.Rank())
		}
	}
	if HealthState("odd").Valid() {
		t.Error("unknown state valid")
	}
	if WorstHealthState() != HealthHealthy || WorstHealthState(HealthStarting, HealthFailed, HealthDegraded) != HealthFailed {
		t.Error("WorstHealthState")
	}
	if !ClearsKey(HealthHealthy, "", nil) || ClearsKey(HealthHealthy, "x", nil) || ClearsKey(HealthHealthy, "", map[string]float64{"a": 1}) || ClearsKey(HealthDegraded, "", nil) {
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
	if len(got) != MaxHealthMetrics {
		t.Fatalf("kept %d metrics", len(got))
	}
	for name := range got {
		if isSecretMetric(name) || len(name) > MaxHealthMetricNameLength {
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
	if !(TierMember < TierRegular && TierRegular < TierStaff) {
		t.Fatal("order")
	}
	for _, tier := range []TrustTier{TierMember, TierRegular, TierStaff} {
		parsed, err := ParseTrustTier(tier.String())
		if err != nil || parsed != tier {
			t.Errorf("round trip %s", tier)
		}
		b, err := json.Marshal(tier)
		if err != nil || string(b) != `"`+tier.String()+`"` {
			t.Errorf("marshal %s: %s %v", tier, b, err)
		}
		var back TrustTier
		if err := json.Unmarshal(b, &back); err != nil || back != tier {
			t.Errorf("unmarshal %s", b)
		}
	}
	_, err := ParseTrustTier("admin")
	checkErr(t, err, "unknown trust tier 'admin'")
	var bad TrustTier
	if err := json.Unmarshal([]byte(`"admin"`), &bad); err == nil {
		t.Error("unmarshal admin")
	}
	if _, err := json.Marshal(TrustTier(0)); err == nil {
		t.Error("marshal unset tier")
	}
	if TrustTier(0).String() != "" || TrustTier(0).Valid() || TrustTier(4).Valid() {
		t.Error("unset tier")
	}
	if TrustTier(0).Or(TierStaff) != TierStaff || TierRegular.Or(TierStaff) != TierRegular {
		t.Error("Or")
	}
	if !TierStaff.AtLeast(TierRegular) || TierMember.AtLeast(TierRegular) {
		t.Error("AtLeast")
	}
}

func TestSettingsDefinition(t *testing.T) {
	def := SettingsDefinition{Label: "Kudos", Fields: []SettingField{
		{Name: "daily_limit", Kind: SettingInt, Default: 5, Min: 1, HasMin: true},
		{Name: "ratio", Kind: SettingFloat, Default: 0.5},
		{Name: "mode", Kind: SettingString, Default: "fast", Choices: []string{"fast", "slow"}},
		{Name: "enabled", Kind: SettingBool, Default: false},
		{Name: "api_key", Kind: SettingString, Secret: true},
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
		f    SettingField
		want string
	}{
		{SettingField{Name: "Bad", Kind: SettingInt}, "module 'm' setting 'Bad' has an invalid name"},
		{SettingField{Name: "a", Kind: "list"}, "module 'm' setting 'a' has unsupported kind 'list'"},
		{SettingField{Name: "a", Kind: SettingBool, HasMin: true}, "module 'm' setting 'a' has a minimum but is not numeric"},
		{SettingField{Name: "a", Kind: SettingInt, Choices: []string{"1"}}, "module 'm' setting 'a' has choices but is not str"},
		{SettingField{Name: "a", Kind: SettingFloat, Default: "x"}, "module 'm' setting 'a' has an invalid default: must be a number"},
		{SettingField{Name: "a", Kind: SettingFloat, Default: -1.0, Min: 0, HasMin: true}, "module 'm' setting 'a' has an invalid default: must be at least 0"},
		{SettingField{Name: "a", Kind: SettingBool, Default: 1}, "module 'm' setting 'a' has an invalid default: must be true or false"},
		{SettingField{Name: "a", Kind: SettingString, Default: 1}, "module 'm' setting 'a' has an invalid default: must be text"},
		{SettingField{Name: "a", Kind: SettingInt, Default: uint64(math.MaxUint64)}, "module 'm' setting 'a' has an invalid default: must be an integer"},
	}
	for _, de := range defErrs {
		checkErr(t, SettingsDefinition{Fields: []SettingField{de.f}}.Validate("m"), de.want)
	}
	checkErr(t, SettingsDefinition{Fields: []SettingField{{Name: "a", Kind: SettingInt}, {Name: "a", Kind: SettingInt}}}.Validate("m"), "module 'm' declares setting 'a' twice")
	if SettingEnvName("reference-kudos", "daily_limit") != "REFERENCE_KUDOS_DAILY_LIMIT" {
		t.Error("SettingEnvName")
	}
	ns := NewSettings(map[string]any{"n": 3, "f": float32(1.5), "s": "x"})
	if ns.Int("n") != 3 || ns.Float("s") != 0 || ns.String("n") != "" {
		t.Error("NewSettings normalization")
	}
	if v, ok := ns.Lookup("s"); !ok || v != "x" {
		t.Error("Lookup")
	}
	var zero Settings
	if zero.Int("x") != 0 || len(zero.Names()) != 0 {
		t.Error("zero settings")
	}
}

func TestAsInt64(t *testing.T) {
	for _, v := range []any{int(1), int8(1), int16(1), int32(1), int64(1), uint8(1), uint16(1), uint32(1), uint(1), uint64(1)} {
		if n, ok := asInt64(v); !ok || n != 1 {
			t.Errorf("%T", v)
		}
	}
	for _, v := range []any{true, 1.0, "1", uint64(math.MaxUint64), uint(math.MaxUint64)} {
		if _, ok := asInt64(v); ok {
			t.Errorf("%T %v accepted", v, v)
		}
	}
}

func TestErrorTypes(t *testing.T) {
	u := NewUndeclaredDiscordAction("reference_kudos", ActionSendDM)
	checkErr(t, u, "module 'reference_kudos' did not declare Discord action 'send_dm'")
	var got *UndeclaredDiscordAction
	if !errors.As(error(u), &got) || got.Action != ActionSendDM || got.Module != "reference_kudos" {
		t.Error("errors.As UndeclaredDiscordAction")
	}
	wrapped := errors.Join(errors.New("context"), u)
	if !errors.Is(wrapped, ErrContract) || !errors.As(wrapped, &got) {
		t.Error("wrapped contract error lost")
	}
	cause := errors.New("cause")
	mce := &ModuleContractError{Message: "m", Err: cause}
	if !errors.Is(mce, cause) {
		t.Error("cause")
	}
	sync := &CommandSyncError{}
	if sync.Error() != "Discord did not accept a live guild-command synchronization" || (&CommandSyncError{Message: "x", Err: cause}).Error() != "x" || !errors.Is(&CommandSyncError{Err: cause}, cause) {
		t.Error("CommandSyncError")
	}
	if (&ProposalError{Message: "p"}).Error() != "p" {
		t.Error("ProposalError")
	}
	fe := &FileAccessError{Code: FileTooLarge, Message: "file is larger than max_bytes"}
	if !errors.Is(fe, &FileAccessError{Code: FileTooLarge}) || errors.Is(fe, &FileAccessError{Code: FileExpired}) || errors.Is(fe, ErrContract) || fe.Error() != "file is larger than max_bytes" {
		t.Error("FileAccessError")
	}
	err := ValidateFileReadLimit(0)
	var fae *FileAccessError
	if !errors.As(err, &fae) || fae.Code != FileInvalidLimit {
		t.Errorf("ValidateFileReadLimit: %v", err)
	}
	if ValidateFileReadLimit(1) != nil {
		t.Error("limit 1")
	}
}

func TestTools(t *testing.T) {
	handler := ToolHandler(nil)
	checkErr(t, ValidateTool(Tool{Name: "give_kudos", Description: "d", Handler: handler}), "tool 'give_kudos' needs a handler")
	checkErr(t, ValidateTool(Tool{}), "a tool needs a name")
	checkErr(t, ValidateTool(Tool{Name: "x"}), "tool 'x' needs a description")
	ok := Tool{Name: "x", Description: "d", Handler: func(_ context.Context, _ ToolContext, _ json.RawMessage) (string, error) { return "", nil }}
	checkErr(t, ValidateTool(ok), "")
	ok.MinTier = 7
	checkErr(t, ValidateTool(ok), "tool 'x' has an invalid min_tier")
	if (Tool{}).EffectiveMinTier() != TierMember {
		t.Error("tool default tier")
	}
	checkErr(t, NewToolsSealed("x"), "tool 'x' cannot be registered after module loading; register tools from ModuleSpec.create(), not start()")
}

func TestDiscordHelpers(t *testing.T) {
	checkErr(t, HistoryQuery{After: 1, Before: 2}.Validate(), "message history accepts either after or before, not both")
	checkErr(t, HistoryQuery{After: 1}.Validate(), "")
	for limit, want := range map[int]int{0: 100, -5: 1, 1: 1, 50: 50, 100: 100, 101: 100} {
		if got := (HistoryQuery{Limit: limit}).ClampedLimit(); got != want {
			t.Errorf("ClampedLimit(%d) = %d", limit, got)
		}
	}
	if got := AuditReason("mod", "  spam \n and   abuse "); got != "[mod] spam and abuse" {
		t.Errorf("AuditReason = %q", got)
	}
	long := AuditReason("mod", strings.Repeat("é", 600))
	if len([]rune(long)) != MaxAuditReasonLength || !strings.HasPrefix(long, "[mod] é") {
		t.Errorf("long reason length %d", len([]rune(long)))
	}
	if AuditReason("mod", "") != "[mod]" {
		t.Errorf("empty reason %q", AuditReason("mod", ""))
	}
}

func TestEventGuildID(t *testing.T) {
	ref := MessageRef{GuildID: 100, ChannelID: 2, MessageID: 3}
	tests := []struct {
		payload any
		want    uint64
	}{
		{MessageEvent{Message: MessageSnapshot{Ref: ref}}, 100},
		{MessageEditEvent{Ref: ref}, 100},
		{MessageDeleteEvent{Ref: ref}, 100},
		{MessageBulkDeleteEvent{Refs: []MessageRef{ref}}, 100},
		{MessageBulkDeleteEvent{}, 0},
		{InviteCreateEvent{Invite: InviteSnapshot{GuildID: 100}}, 100},
		{InviteDeleteEvent{Invite: InviteSnapshot{GuildID: 100}}, 100},
		{MemberJoinEvent{Member: MemberSnapshot{GuildID: 100}}, 100},
		{MemberRemoveEvent{GuildID: 100}, 100},
		{MemberUpdateEvent{GuildID: 100}, 100},
		{AuditLogEntryEvent{GuildID: 100}, 100},
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
		if ns, _, err := SplitTopic(topic, false); err != nil || ns != CoreTopicPrefix {
			t.Errorf("core topic %s: %v", topic, err)
		}
	}
}

type customGuild struct{}

func (customGuild) EventGuildID() uint64 { return 42 }

func TestProposalTargetsAndResults(t *testing.T) {
	if GuildTarget(100) != "guild:100" || ChannelTarget(5) != "channel:5" || GuildModuleTarget(100, "reference_kudos") != "guild:100:reference_kudos" {
		t.Error("targets")
	}
	r := ScheduledResult{Messages: []ScheduledResultMessage{
		{Attachments: []ScheduledResultAttachment{{ID: "a"}, {ID: "b"}}},
		{Attachments: []ScheduledResultAttachment{{ID: "c"}}},
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
	if empty.State != HealthHealthy || empty.Detail != "" || empty.Metrics == nil {
		t.Fatalf("empty: %+v", empty)
	}
	t1, t2 := time.Unix(10, 0), time.Unix(20, 0)
	got := AggregateHealth(
		ModuleHealth{State: HealthHealthy, Detail: "fine", Metrics: map[string]float64{"guilds": 1}, UpdatedAt: t1},
		ModuleHealth{State: HealthDegraded, Detail: "1 guild digest(s) failed", Metrics: map[string]float64{"digest_failures": 1}, UpdatedAt: t2},
		ModuleHealth{State: HealthDegraded, Detail: "1 guild digest(s) failed"},
		ModuleHealth{State: HealthDegraded, Detail: "Scheduled results: 1 blocked, 0 retrying", Metrics: map[string]float64{"guilds": 2}},
	)
	if got.State != HealthDegraded || got.Detail != "1 guild digest(s) failed; Scheduled results: 1 blocked, 0 retrying" {
		t.Fatalf("aggregate: %+v", got)
	}
	if got.Metrics["guilds"] != 2 || got.Metrics["digest_failures"] != 1 || !got.UpdatedAt.Equal(t2) {
		t.Fatalf("metrics/time: %+v", got)
	}
	long := AggregateHealth(ModuleHealth{State: HealthFailed, Detail: strings.Repeat("x", 400)}, ModuleHealth{State: HealthFailed, Detail: strings.Repeat("y", 400)})
	if len(long.Detail) != MaxHealthDetailLength {
		t.Fatalf("detail length %d", len(long.Detail))
	}
}

func TestProposalValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Proposal
		want string
	}{
		{"ok", Proposal{Summary: " s ", Content: strings.Repeat("x", MaxProposalContentBytes)}, ""},
		{"longest summary", Proposal{Summary: strings.Repeat("é", MaxProposalSummaryLength)}, ""},
		{"blank summary", Proposal{Summary: " \n "}, "proposal summary must be 1-1000 characters"},
		{"long summary", Proposal{Summary: strings.Repeat("é", MaxProposalSummaryLength+1)}, "proposal summary must be 1-1000 characters"},
		{"huge content", Proposal{Summary: "s", Content: strings.Repeat("x", MaxProposalContentBytes+1)}, "configuration fragment exceeds the 1 MB limit"},
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
			var pe *ProposalError
			if !errors.As(err, &pe) || pe.Message != tt.want {
				t.Fatalf("got %v, want ProposalError %q", err, tt.want)
			}
		})
	}
}
