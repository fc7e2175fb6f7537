package form

import (
	"slices"
	"testing"

	"github.com/kimiapp/kimi/app/tasks"
)

// TestTaskFormDefinition: ids separated by commas, spaces or lines; what
// is not an id or a colour is the field's error; removed files are
// dropped and uploads appended; an empty embed is none.
func TestTaskFormDefinition(t *testing.T) {
	cur := []tasks.Attachment{{Name: "a.txt", Data: []byte("a")}, {Name: "b.txt", Data: []byte("b")}}
	tests := []struct {
		name      string
		f         TaskForm
		wantErr   string // field with an error ("" none)
		wantDests []uint64
		wantFiles []string
		wantColor int
		wantEmbed bool
	}{
		{name: "ids in every separator", f: TaskForm{Guild: "42", Owner: "9", Destinations: "100, 101\n102 103"},
			wantDests: []uint64{100, 101, 102, 103}, wantFiles: []string{"a.txt", "b.txt"}},
		{name: "a name among the ids", f: TaskForm{Destinations: "100, general"}, wantErr: tasks.FieldDestinations},
		{name: "id zero", f: TaskForm{MentionUsers: "0"}, wantErr: tasks.FieldMentionUsers},
		{name: "id past int64", f: TaskForm{MentionRoles: "9223372036854775808"}, wantErr: tasks.FieldMentionRoles},
		{name: "guild not digits", f: TaskForm{Guild: "x"}, wantErr: tasks.FieldGuild},
		{name: "bad colour", f: TaskForm{EmbedColor: "#12345"}, wantErr: tasks.FieldEmbed, wantEmbed: true},
		{name: "colour", f: TaskForm{EmbedTitle: "T", EmbedColor: "#5865F2"}, wantColor: 0x5865F2, wantEmbed: true, wantFiles: []string{"a.txt", "b.txt"}},
		{name: "remove and upload", f: TaskForm{RemoveFiles: []string{"a.txt"}, Uploads: []tasks.Attachment{{Name: "c.txt"}}},
			wantFiles: []string{"b.txt", "c.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, errs := tt.f.Definition(cur)
			if tt.wantErr != "" {
				if !errs.Has(tt.wantErr) || len(errs) != 1 {
					t.Fatalf("errors = %v, want one on %s", errs, tt.wantErr)
				}
				return
			}
			if !errs.OK() {
				t.Fatalf("errors = %v", errs)
			}
			if tt.wantDests != nil && !slices.Equal(def.Destinations, tt.wantDests) {
				t.Errorf("destinations = %v, want %v", def.Destinations, tt.wantDests)
			}
			var names []string
			for _, f := range def.Files {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, tt.wantFiles) {
				t.Errorf("files = %v, want %v", names, tt.wantFiles)
			}
			if (def.Embed != nil) != tt.wantEmbed || (def.Embed != nil && def.Embed.Color != tt.wantColor) {
				t.Errorf("embed = %+v, want embed %v colour %#x", def.Embed, tt.wantEmbed, tt.wantColor)
			}
		})
	}
	// The edit form's prefill reads back as the same definition.
	def := tasks.Definition{GuildID: 42, Name: "n", OwnerID: 9, Destinations: []uint64{100, 101}, Template: "t",
		Embed: &tasks.Embed{Title: "T", Color: 0xABCDEF}, MentionUsers: []uint64{5}, LogChannelID: 7,
		Schedule: map[string]string{tasks.FieldKind: "daily", tasks.FieldTime: "09:00"}}
	back, errs := TaskFormOf(def).Definition(nil)
	if !errs.OK() || back.GuildID != 42 || back.OwnerID != 9 || !slices.Equal(back.Destinations, def.Destinations) ||
		back.Embed == nil || back.Embed.Color != 0xABCDEF || back.LogChannelID != 7 || back.Schedule[tasks.FieldTime] != "09:00" {
		t.Errorf("prefill read back = %+v, %v", back, errs)
	}
}
