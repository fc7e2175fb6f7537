package tasks

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
)

// Test ids: guild 42 has channels 100 (text), 101 (announcement), 102
// (thread), 103 (forum), 104 (text the owner cannot post in), 105 (text
// the bot cannot post in); 900 is a DM, 200 another guild's channel.
const (
	testGuild uint64 = 42
	testOwner uint64 = 7
)

// fakeChecker is Discord as a table.
type fakeChecker struct {
	kinds   map[uint64]ChannelKind
	denied  map[[2]uint64]bool  // (user, channel) that cannot post
	lacks   map[[2]uint64]Needs // what (user, channel) lacks: files, embeds
	upload  int64
	failing bool
}

var _ Checker = (*fakeChecker)(nil)

func newChecker() *fakeChecker {
	return &fakeChecker{
		kinds: map[uint64]ChannelKind{100: ChannelText, 101: ChannelAnnouncement, 102: ChannelThread, 103: ChannelForum,
			104: ChannelText, 105: ChannelText, 900: ChannelDM},
		denied: map[[2]uint64]bool{{testOwner, 104}: true, {BotUser, 105}: true},
		upload: 10 << 20,
	}
}

func (f *fakeChecker) ChannelKind(_ context.Context, guild, channel uint64) (ChannelKind, error) {
	if f.failing {
		return "", errors.New("discord is down")
	}
	if guild != testGuild {
		return ChannelMissing, nil
	}
	return f.kinds[channel], nil
}

func (f *fakeChecker) CanPost(_ context.Context, _, user, channel uint64, needs Needs) (bool, error) {
	if f.failing {
		return false, errors.New("discord is down")
	}
	return !f.denied[[2]uint64{user, channel}] && needs&f.lacks[[2]uint64{user, channel}] == 0, nil
}

func (f *fakeChecker) UploadLimit(context.Context, uint64) (int64, error) {
	if f.failing {
		return 0, errors.New("discord is down")
	}
	return f.upload, nil
}

var enabled = guildcfg.TaskPolicy{Enabled: true, Timezone: "UTC"}

func validDef() Definition {
	return Definition{
		GuildID:      testGuild,
		Name:         "Morning digest",
		OwnerID:      testOwner,
		Schedule:     map[string]string{FieldKind: "daily", FieldTime: "09:00", FieldTimezone: "Europe/Berlin"},
		Template:     "Good morning, it is {weekday} {date}",
		Destinations: []uint64{100, 101, 102},
		MentionUsers: []uint64{7},
		MentionRoles: []uint64{8},
		Files:        []Attachment{{Name: "agenda.txt", Data: []byte("agenda")}},
	}
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDefinitionValidate: each bad field gets its own message, keyed by
// the field (the schedule's under its own names), and nothing else is
// reported.
func TestDefinitionValidate(t *testing.T) {
	big := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name   string
		policy guildcfg.TaskPolicy
		edit   func(d *Definition, c *fakeChecker)
		want   map[string]string // field → substring of its message
	}{
		{"valid", enabled, func(*Definition, *fakeChecker) {}, nil},
		{"name empty", enabled, func(d *Definition, _ *fakeChecker) { d.Name = "  " }, map[string]string{FieldName: "name is required"}},
		{"name long", enabled, func(d *Definition, _ *fakeChecker) { d.Name = strings.Repeat("é", 101) }, map[string]string{FieldName: "101 characters, at most 100"}},
		{"name padded", enabled, func(d *Definition, _ *fakeChecker) { d.Name = " x" }, map[string]string{FieldName: "must not start or end with spaces"}},
		{"name two lines", enabled, func(d *Definition, _ *fakeChecker) { d.Name = "a\nb" }, map[string]string{FieldName: "one line"}},
		{"no owner", enabled, func(d *Definition, _ *fakeChecker) { d.OwnerID = 0 }, map[string]string{FieldOwner: "owner must be a Discord user id"}},
		{"no destinations", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = nil }, map[string]string{FieldDestinations: "at least one destination"}},
		{"eleven destinations", enabled, func(d *Definition, c *fakeChecker) {
			d.Destinations = nil
			for i := uint64(0); i < 11; i++ {
				c.kinds[300+i] = ChannelText
				d.Destinations = append(d.Destinations, 300+i)
			}
		}, map[string]string{FieldDestinations: "11 destinations, at most 10"}},
		{"twice", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{100, 100} }, map[string]string{FieldDestinations: "channel 100 is listed twice"}},
		{"not in policy", guildcfg.TaskPolicy{Enabled: true, Destinations: []uint64{100}}, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{100, 101} },
			map[string]string{FieldDestinations: "channel 101 is not one of this server's task destinations"}},
		{"in policy", guildcfg.TaskPolicy{Enabled: true, Destinations: []uint64{100, 101}}, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{100, 101} }, nil},
		{"forum", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{103} }, map[string]string{FieldDestinations: "channel 103 is a forum"}},
		{"dm", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{900} }, map[string]string{FieldDestinations: "channel 900 is a direct message"}},
		{"other guild", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{200} }, map[string]string{FieldDestinations: "channel 200 is not a channel of this server"}},
		{"zero channel", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{0} }, map[string]string{FieldDestinations: "0 is not a Discord channel id"}},
		{"owner cannot post", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{104} }, map[string]string{FieldDestinations: "the owner cannot post in channel 104"}},
		{"bot cannot post", enabled, func(d *Definition, _ *fakeChecker) { d.Destinations = []uint64{105} }, map[string]string{FieldDestinations: "Kimi cannot post in channel 105"}},
		{"owner without ATTACH_FILES, a file", enabled, func(_ *Definition, c *fakeChecker) { c.lacks = map[[2]uint64]Needs{{testOwner, 100}: NeedFiles} },
			map[string]string{FieldDestinations: "the owner cannot post in channel 100 (the post needs: view the channel, send messages and attach files)"}},
		{"owner without ATTACH_FILES, text only", enabled, func(d *Definition, c *fakeChecker) {
			c.lacks = map[[2]uint64]Needs{{testOwner, 100}: NeedFiles}
			d.Files = nil
		}, nil},
		{"owner without EMBED_LINKS, an embed", enabled, func(d *Definition, c *fakeChecker) {
			c.lacks = map[[2]uint64]Needs{{testOwner, 100}: NeedEmbeds}
			d.Files, d.Embed = nil, &Embed{Title: "Digest"}
		}, map[string]string{FieldDestinations: "the owner cannot post in channel 100 (the post needs: view the channel, send messages and embed links)"}},
		{"bot without EMBED_LINKS, files only", enabled, func(_ *Definition, c *fakeChecker) { c.lacks = map[[2]uint64]Needs{{BotUser, 100}: NeedEmbeds} }, nil},
		{"log channel: lines need neither files nor embeds", enabled, func(d *Definition, c *fakeChecker) {
			c.lacks = map[[2]uint64]Needs{{testOwner, 101}: NeedFiles}
			d.Destinations, d.LogChannelID = []uint64{100}, 101
		}, nil},
		{"discord down", enabled, func(_ *Definition, c *fakeChecker) { c.failing = true },
			map[string]string{FieldDestinations: "could not be checked; try again", FieldAttachments: "upload limit could not be checked"}},
		{"content empty", enabled, func(d *Definition, _ *fakeChecker) { d.Template = " \n" }, map[string]string{FieldContent: "content is required"}},
		{"content long after template", enabled, func(d *Definition, _ *fakeChecker) {
			d.Name = strings.Repeat("n", 100)
			d.Template = strings.Repeat("x", MaxPostContent-10) + "{task}"
		}, map[string]string{FieldContent: "60090 characters after its placeholders, at most 60000"}},
		{"content at the limit", enabled, func(d *Definition, _ *fakeChecker) { d.Template = strings.Repeat("x", MaxPostContent) }, nil},
		{"embed", enabled, func(d *Definition, _ *fakeChecker) { d.Embed = &Embed{Title: strings.Repeat("t", 300)} }, map[string]string{FieldEmbed: "title"}},
		{"mention zero", enabled, func(d *Definition, _ *fakeChecker) { d.MentionUsers = []uint64{0} }, map[string]string{FieldMentionUsers: "user id 0 is not a Discord id"}},
		{"mentions many", enabled, func(d *Definition, _ *fakeChecker) {
			d.MentionRoles = nil
			for i := uint64(1); i <= 101; i++ {
				d.MentionRoles = append(d.MentionRoles, i)
			}
		}, map[string]string{FieldMentionRoles: "101 roles, at most 100"}},
		{"attachment name", enabled, func(d *Definition, _ *fakeChecker) { d.Files = []Attachment{{Name: "../x", Data: []byte("a")}} },
			map[string]string{FieldAttachments: "attachment 1 has no valid file name"}},
		{"attachment names twice", enabled, func(d *Definition, _ *fakeChecker) { d.Files = []Attachment{{Name: "a"}, {Name: "a"}} },
			map[string]string{FieldAttachments: `two attachments are named "a"`}},
		{"attachment over upload limit", enabled, func(d *Definition, c *fakeChecker) {
			c.upload = 1000
			d.Files = []Attachment{{Name: "big.bin", Data: big(1001)}}
		}, map[string]string{FieldAttachments: "big.bin is 1001 bytes, more than this server's upload limit of 1000 bytes"}},
		{"attachments over 25 MiB", enabled, func(d *Definition, _ *fakeChecker) {
			d.Files = []Attachment{{Name: "a", Data: big(9 << 20)}, {Name: "b", Data: big(9 << 20)}, {Name: "c", Data: big(9 << 20)}}
		}, map[string]string{FieldAttachments: "more than 26214400 bytes (25 MiB)"}},
		{"schedule kind", enabled, func(d *Definition, _ *fakeChecker) { d.Schedule = map[string]string{FieldTimezone: "UTC"} }, map[string]string{FieldKind: "kind is required"}},
		{"schedule zone and time", enabled, func(d *Definition, _ *fakeChecker) {
			d.Schedule = map[string]string{FieldKind: "daily", FieldTime: "25:00", FieldTimezone: "Mars/Olympus"}
		}, map[string]string{FieldTime: "time must be between 00:00 and 23:59", FieldTimezone: "Mars/Olympus"}},
		{"no guild", enabled, func(d *Definition, _ *fakeChecker) { d.GuildID = 0; d.Destinations = []uint64{100} },
			map[string]string{FieldGuild: "needs a server", FieldDestinations: "channel 100 could not be checked"}},
		{"zone from the policy", guildcfg.TaskPolicy{Enabled: true, Timezone: "America/New_York"}, func(d *Definition, _ *fakeChecker) { delete(d.Schedule, FieldTimezone) }, nil},
		{"no zone anywhere", guildcfg.TaskPolicy{Enabled: true}, func(d *Definition, _ *fakeChecker) { delete(d.Schedule, FieldTimezone) }, map[string]string{FieldTimezone: "timezone"}},
		{"log channel forum", enabled, func(d *Definition, _ *fakeChecker) { d.LogChannelID = 103 }, map[string]string{FieldLogChannel: "channel 103 is a forum"}},
		{"log channel thread", enabled, func(d *Definition, _ *fakeChecker) { d.LogChannelID = 102 }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, c := validDef(), newChecker()
			tc.edit(&d, c)
			got := d.Validate(context.Background(), tc.policy, c)
			if len(got) != len(tc.want) {
				t.Fatalf("Validate = %v, want fields %v", got, slices.Sorted(maps.Keys(tc.want)))
			}
			for f, sub := range tc.want {
				if !strings.Contains(got[f], sub) {
					t.Errorf("field %s: %q, want it to contain %q", f, got[f], sub)
				}
			}
		})
	}
}
