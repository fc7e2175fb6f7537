package form

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/tasks"
)

// fuzzChecker accepts every channel of every guild (the fuzz is about the
// form's text, not Discord's answers) and counts what it is asked.
type fuzzChecker struct{ asked int }

func (c *fuzzChecker) ChannelKind(context.Context, uint64, uint64) (tasks.ChannelKind, error) {
	c.asked++
	return tasks.ChannelText, nil
}

func (c *fuzzChecker) CanPost(context.Context, uint64, uint64, uint64, tasks.Needs) (bool, error) {
	c.asked++
	return true, nil
}

func (c *fuzzChecker) UploadLimit(context.Context, uint64) (int64, error) { return 8 << 20, nil }

var _ tasks.Checker = (*fuzzChecker)(nil)

// maxFieldMessage bounds a message shown beside a field: whatever was
// typed, a message quotes at most a clipped part of it.
const maxFieldMessage = 600

// FuzzTaskForm: whatever is typed into the /tasks form (ids, id lists,
// schedule fields, colour, content, embed) and whatever an uploaded file
// is named, ParseTaskForm and Definition never panic; a definition they
// return holds only ids in (0, 2^63), a colour 0..0xFFFFFF and the
// uploads as sent; their errors, and the service's field errors for the
// definition, are short messages (valid UTF-8, bounded, no Go error
// text), and the checks Discord is asked stay bounded by the definition's
// limits; a definition the service accepts fits the revision's JSON
// CHECK (1,000,000 bytes).
func FuzzTaskForm(f *testing.F) {
	type seed struct{ guild, owner, dests, users, colour, content, title, kind, every, tz, file string }
	for _, s := range []seed{
		{"1", "2", "3, 4", "5", "#5865F2", "hi {task}", "t", "every", "3600", "UTC", "a.txt"},
		{"+1", "-2", "3,,4\n5", "18446744073709551616", "##123456", "", "", "daily", "", "Local", "../../etc/passwd"},
		{"0", "9223372036854775808", "1 1", "0x10", "#GGGGGG", "{run}{date}{time}{weekday}", "\xff", "weekly", "-1", "Europe/Paris", "a\\b"},
		{"٣", "1e3", "1\u00a02", "1_000", "#+12345", "\x00", strings.Repeat("x", 300), "monthly", "1e9", strings.Repeat("A/", 200), "a\x00b"},
		{"1", "2", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "", "5865f2", strings.Repeat("{task}", 2000), "", "once", "", "", strings.Repeat("n", 300)},
		{"1", "2", "3", "", "", "<&>\u2028", "", "every", "60", "America/New_York", " spaced.txt "},
	} {
		f.Add(s.guild, s.owner, s.dests, s.users, s.colour, s.content, s.title, s.kind, s.every, s.tz, s.file)
	}
	f.Fuzz(func(t *testing.T, guild, owner, dests, users, colour, content, title, kind, every, tz, file string) {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		for k, v := range map[string]string{
			tasks.FieldGuild: guild, tasks.FieldName: "Task", tasks.FieldOwner: owner, tasks.FieldDestinations: dests,
			tasks.FieldMentionUsers: users, tasks.FieldMentionRoles: users, tasks.FieldLogChannel: owner,
			TaskEmbedColor: colour, TaskEmbedTitle: title, TaskEmbedDescription: content, tasks.FieldContent: content,
			tasks.FieldKind: kind, tasks.FieldEvery: every, tasks.FieldAt: every, tasks.FieldTime: every,
			tasks.FieldDay: every, tasks.FieldWeekday: every, tasks.FieldTimezone: tz, tasks.FieldLate: every,
		} {
			_ = w.WriteField(k, v)
		}
		if file != "" {
			fw, err := w.CreateFormFile(tasks.FieldAttachments, file)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = fw.Write([]byte("data"))
		}
		_ = w.Close()
		r := httptest.NewRequest(http.MethodPost, "/tasks", &body)
		r.Header.Set("Content-Type", w.FormDataContentType())
		tf, upErr := ParseTaskForm(r)
		def, errs := tf.Definition(nil)
		if upErr != nil {
			return // MsgTaskUpload (the handlers' message), nothing else is used
		}
		for field, msg := range errs {
			checkMessage(t, "form", field, msg)
		}
		for _, id := range append(append(append([]uint64{def.GuildID, def.OwnerID, def.LogChannelID}, def.Destinations...), def.MentionUsers...), def.MentionRoles...) {
			if id > 1<<63-1 {
				t.Fatalf("id %d does not fit SQLite's INTEGER", id)
			}
		}
		if errs.OK() {
			for _, ids := range [][]uint64{def.Destinations, def.MentionUsers, def.MentionRoles} {
				for _, id := range ids {
					if id == 0 {
						t.Fatalf("a list holds id 0: %v", ids)
					}
				}
			}
		}
		if def.Embed != nil && (def.Embed.Color < 0 || def.Embed.Color > 0xFFFFFF) && !errs.Has(tasks.FieldEmbed) {
			t.Fatalf("colour %q gave %#x without an error", colour, def.Embed.Color)
		}
		if file != "" && len(def.Files) != 1 && len(def.Files) != 0 {
			t.Fatalf("one upload gave %d files", len(def.Files))
		}
		if !errs.OK() {
			return
		}
		chk := &fuzzChecker{}
		fe := def.Validate(context.Background(), guildcfg.TaskPolicy{Enabled: true}, chk)
		for field, msg := range fe {
			checkMessage(t, "definition", field, msg)
		}
		if limit := 3 * (tasks.MaxDestinations + 1); chk.asked > limit {
			t.Fatalf("validation asked Discord %d times for %d destinations, want at most %d", chk.asked, len(def.Destinations), limit)
		}
		if fe != nil {
			return
		}
		js, err := json.Marshal(def)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) > 1_000_000 {
			t.Fatalf("an accepted definition is %d bytes of JSON, over the revision's CHECK", len(js))
		}
		for _, a := range def.Files {
			if a.Name == "" || len(a.Name) > tasks.MaxAttachmentName || strings.ContainsAny(a.Name, "/\\\x00") {
				t.Fatalf("accepted file name %q", a.Name)
			}
		}
	})
}

func checkMessage(t *testing.T, where, field, msg string) {
	t.Helper()
	switch {
	case msg == "":
		t.Fatalf("%s error on %s is empty", where, field)
	case !utf8.ValidString(msg):
		t.Fatalf("%s error on %s is not UTF-8: %q", where, field, msg)
	case len(msg) > maxFieldMessage:
		t.Fatalf("%s error on %s is %d bytes: %.200q…", where, field, len(msg), msg)
	case strings.Contains(msg, "strconv.") || strings.Contains(msg, "invalid syntax") || strings.Contains(msg, "tasks: ") || strings.Contains(msg, "form: "):
		t.Fatalf("%s error on %s is a Go error: %q", where, field, msg)
	}
}
