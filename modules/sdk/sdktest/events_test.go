package sdktest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestEventsPublishEnforcesTheModuleNamespace(t *testing.T) {
	e := NewFakeEvents("my-mod", sdk.Permissions{})
	tests := []struct {
		topic string
		want  string // "" = accepted
	}{
		{"my_mod.happened", ""},
		{"discord.message", "event namespace 'discord' is reserved by core"},
		{"other.thing", "module 'my-mod' may only publish under 'my_mod'.*"},
		{"my_mod", "invalid event topic 'my_mod'; expected '<namespace>.<name>'"},
		{"my_mod.*", "invalid event topic 'my_mod.*'; expected '<namespace>.<name>'"},
	}
	for _, tt := range tests {
		err := e.Publish(tt.topic, 1)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("publish %q = %v, want %q", tt.topic, err, tt.want)
		}
		var topicErr *sdk.EventTopicError
		if tt.want != "" && !errors.As(err, &topicErr) {
			t.Errorf("publish %q error is %T, want *sdk.EventTopicError", tt.topic, err)
		}
	}
	published := e.Published()
	if len(published) != 1 || published[0].Topic != "my_mod.happened" || published[0].SourceModule != "my-mod" || published[0].Payload != 1 {
		t.Errorf("published = %+v", published)
	}
}

func TestEventsSubscribeAndDeliverWithGlobs(t *testing.T) {
	ctx := context.Background()
	e := NewFakeEvents("mod", sdk.Permissions{EventTopics: []string{"discord.*", "other.news"}})
	var got []string
	record := func(tag string) sdk.EventHandler {
		return func(_ context.Context, ev sdk.Event) error {
			got = append(got, tag+":"+ev.Topic+":"+ev.SourceModule)
			return nil
		}
	}
	subs := map[string]sdk.Registration{}
	for _, pattern := range []string{"discord.*", "discord.member_remove", "other.news", "mod.*"} {
		reg, err := e.Subscribe(pattern, record(pattern))
		if err != nil {
			t.Fatalf("subscribe %q: %v", pattern, err)
		}
		subs[pattern] = reg
	}
	if _, err := e.Subscribe("other.*", record("x")); err == nil || err.Error() != "module 'mod' did not declare event topic 'other.*'" {
		t.Errorf("undeclared wildcard subscription = %v", err)
	}
	if _, err := e.Subscribe("mod.x", nil); !errors.Is(err, sdk.ErrContract) {
		t.Errorf("nil handler = %v", err)
	}

	n, err := e.Deliver(ctx, "discord.member_remove", nil)
	if err != nil || n != 2 {
		t.Errorf("deliver = %d, %v; want 2 handlers", n, err)
	}
	if n, _ := e.DeliverFrom(ctx, "other", "other.news", nil); n != 1 {
		t.Errorf("deliver other.news = %d", n)
	}
	want := []string{"discord.*:discord.member_remove:core", "discord.member_remove:discord.member_remove:core", "other.news:other.news:other"}
	if !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}

	subs["discord.*"].Close()
	subs["discord.*"].Close() // idempotent
	if got := e.Subscriptions(); !slices.Equal(got, []string{"discord.member_remove", "other.news", "mod.*"}) {
		t.Errorf("subscriptions after close = %v", got)
	}
	if n, _ := e.Deliver(ctx, "discord.message", nil); n != 0 {
		t.Errorf("a closed subscription still received %d", n)
	}
}

func TestEventsHandlerErrorsDoNotStopOtherHandlers(t *testing.T) {
	ctx := context.Background()
	e := NewFakeEvents("mod", sdk.Permissions{})
	boom := errors.New("boom")
	ran := 0
	_, _ = e.Subscribe("mod.*", func(context.Context, sdk.Event) error { ran++; return boom })
	_, _ = e.Subscribe("mod.*", func(context.Context, sdk.Event) error { ran++; panic("kaboom") })
	_, _ = e.Subscribe("mod.*", func(context.Context, sdk.Event) error { ran++; return nil })

	n, err := e.Deliver(ctx, "mod.x", nil)

	if n != 3 || ran != 3 {
		t.Errorf("count %d, ran %d; want 3 and 3", n, ran)
	}
	if !errors.Is(err, boom) || err == nil {
		t.Errorf("err = %v, want the joined handler errors", err)
	}
}

func TestEventsCoreEventsAreFilteredByGuild(t *testing.T) {
	ctx := context.Background()
	e := NewFakeEvents("mod", sdk.Permissions{EventTopics: []string{"discord.*", "other.*"}})
	e.SetGuildFilter(func(g uint64) bool { return g == 100 })
	_, _ = e.Subscribe("discord.*", func(context.Context, sdk.Event) error { return nil })
	_, _ = e.Subscribe("other.*", func(context.Context, sdk.Event) error { return nil })

	tests := []struct {
		name    string
		source  string
		topic   string
		payload any
		want    int
	}{
		{"active guild", sdk.CoreSourceModule, sdk.TopicMemberRemove, sdk.MemberRemoveEvent{GuildID: 100, UserID: 1}, 1},
		{"inactive guild", sdk.CoreSourceModule, sdk.TopicMemberRemove, sdk.MemberRemoveEvent{GuildID: 200, UserID: 1}, 0},
		{"no guild in payload", sdk.CoreSourceModule, "discord.custom", "x", 1},
		{"module events are not filtered", "other", "other.x", sdk.MemberRemoveEvent{GuildID: 200}, 1},
	}
	for _, tt := range tests {
		if n, err := e.DeliverFrom(ctx, tt.source, tt.topic, tt.payload); err != nil || n != tt.want {
			t.Errorf("%s: delivered to %d (%v), want %d", tt.name, n, err, tt.want)
		}
	}
}
