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

// TestEventsGuildFilterAtEnqueueAndBeforeEachHandler: like the host, the
// guild filter is applied when a core event is queued and again right before
// each handler, so a guild that turns inactive mid-delivery reaches no later
// handler; a predicate that panics skips the event.
func TestEventsGuildFilterAtEnqueueAndBeforeEachHandler(t *testing.T) {
	member := func(guild uint64) sdk.MemberRemoveEvent { return sdk.MemberRemoveEvent{GuildID: guild, UserID: 1} }
	tests := []struct {
		name    string
		source  string
		payload any
		// filter is the predicate; active is flipped to false by the
		// first handler when deactivate is set.
		filter     func(active *bool) func(uint64) bool
		deactivate bool
		want       []string // handlers that ran, in order
	}{
		{"active guild", sdk.CoreSourceModule, member(100),
			func(a *bool) func(uint64) bool { return func(uint64) bool { return *a } }, false, []string{"a", "b", "c"}},
		{"inactive at enqueue", sdk.CoreSourceModule, member(100),
			func(*bool) func(uint64) bool { return func(uint64) bool { return false } }, false, nil},
		{"turns inactive during delivery", sdk.CoreSourceModule, member(100),
			func(a *bool) func(uint64) bool { return func(uint64) bool { return *a } }, true, []string{"a"}},
		{"predicate panics", sdk.CoreSourceModule, member(100),
			func(*bool) func(uint64) bool { return func(uint64) bool { panic("lookup failed") } }, false, nil},
		{"no guild in payload", sdk.CoreSourceModule, "plain",
			func(*bool) func(uint64) bool { return func(uint64) bool { return false } }, false, []string{"a", "b", "c"}},
		{"module events are never filtered", "other", member(100),
			func(a *bool) func(uint64) bool { return func(uint64) bool { return *a } }, true, []string{"a", "b", "c"}},
		{"no filter", sdk.CoreSourceModule, member(100), nil, false, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewFakeEvents("mod", sdk.Permissions{EventTopics: []string{"discord.*", "other.*"}})
			active := true
			if tt.filter != nil {
				e.SetGuildFilter(tt.filter(&active))
			}
			topic, pattern := sdk.TopicMemberRemove, "discord.*"
			if tt.source != sdk.CoreSourceModule {
				topic, pattern = tt.source+".x", tt.source+".*"
			}
			var ran []string
			for _, name := range []string{"a", "b", "c"} {
				if _, err := e.Subscribe(pattern, func(context.Context, sdk.Event) error {
					ran = append(ran, name)
					if tt.deactivate {
						active = false
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := e.DeliverFrom(context.Background(), tt.source, topic, tt.payload)
			if err != nil || n != len(tt.want) || !slices.Equal(ran, tt.want) {
				t.Errorf("delivered to %d (%v), ran %v; want %v", n, err, ran, tt.want)
			}
		})
	}
}

// TestRuntimeEventsOfInactiveGuildsReachNoHandler: on a Runtime the filter is
// the module predicate — core-active and, with a guild-settings schema, valid
// settings — so a module test sees Deliver return 0 for such a guild, and a
// guild whose settings turn invalid during delivery reaches no later handler.
func TestRuntimeEventsOfInactiveGuildsReachNoHandler(t *testing.T) {
	tests := []struct {
		name  string
		guild uint64
		// breakFirst makes the first handler invalidate the guild's settings.
		breakFirst bool
		want       int
	}{
		{"active guild", 100, false, 2},
		{"guild the bot is not active in", 300, false, 0},
		{"guild with invalid settings", 200, false, 0},
		{"settings turn invalid during delivery", 100, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p := &probe{}
			var r *Runtime
			ran := 0
			p.start = func(_ context.Context, rt *sdk.Runtime) error {
				for range 2 {
					if _, err := rt.Events.Subscribe("discord.*", func(_ context.Context, ev sdk.Event) error {
						ran++
						if tt.breakFirst {
							r.GuildSettings.ReplaceSilently(tt.guild, map[string]any{"bogus": true})
						}
						return nil
					}); err != nil {
						return err
					}
				}
				return nil
			}
			spec := probeSpec(p)
			spec.Permissions.EventTopics = []string{"discord.*"}
			r = NewRuntime(t, spec,
				WithGuildActive(func(g uint64) bool { return g != 300 }),
				WithGuildSettings(200, map[string]any{"bogus": true}))
			r.Start(ctx)

			n, err := r.Events.Deliver(ctx, sdk.TopicMemberRemove, sdk.MemberRemoveEvent{GuildID: tt.guild, UserID: 1})
			if err != nil || n != tt.want || ran != tt.want {
				t.Errorf("Deliver = %d, %v; %d handlers ran; want %d", n, err, ran, tt.want)
			}
		})
	}
}
