package tasks

import (
	"context"
	"errors"
	"testing"
)

// explainingChecker is fakeChecker that names what a user lacks, as the
// Discord poster does.
type explainingChecker struct {
	*fakeChecker
	lack map[[2]uint64]Lack // (user, channel)
	err  error
}

func (e *explainingChecker) MissingPermissions(_ context.Context, _, user, channel uint64, _ Needs) (Lack, error) {
	return e.lack[[2]uint64{user, channel}], e.err
}

var _ PermissionExplainer = (*explainingChecker)(nil)

// TestRefusalNamesMissingPermissions: with a checker that can name them, a
// refused destination names the permissions missing and the channel by
// name ("the owner lacks Attach Files in #general"); without names, or
// when naming fails, the refusal lists what the post needs.
func TestRefusalNamesMissingPermissions(t *testing.T) {
	ownerFiles := map[[2]uint64]Needs{{testOwner, 100}: NeedFiles}
	cases := []struct {
		name  string
		lacks map[[2]uint64]Needs
		lack  map[[2]uint64]Lack
		err   error
		want  string
	}{
		{"one permission, a named channel", ownerFiles,
			map[[2]uint64]Lack{{testOwner, 100}: {Permissions: []string{"Attach Files"}, Channel: "general"}}, nil,
			"the owner lacks Attach Files in #general"},
		{"two permissions", map[[2]uint64]Needs{{testOwner, 100}: NeedFiles | NeedEmbeds},
			map[[2]uint64]Lack{{testOwner, 100}: {Permissions: []string{"Embed Links", "Attach Files"}, Channel: "general"}}, nil,
			"the owner lacks Embed Links and Attach Files in #general"},
		{"the bot, a channel without a name", map[[2]uint64]Needs{{BotUser, 100}: NeedFiles},
			map[[2]uint64]Lack{{BotUser, 100}: {Permissions: []string{"Attach Files"}}}, nil,
			"Kimi lacks Attach Files in channel 100"},
		{"not a permission", ownerFiles, nil, nil,
			"the owner cannot post in channel 100 (the post needs: view the channel, send messages, attach files and embed links)"},
		{"naming fails", ownerFiles,
			map[[2]uint64]Lack{{testOwner, 100}: {Permissions: []string{"Attach Files"}, Channel: "general"}}, errors.New("discord is down"),
			"the owner cannot post in channel 100 (the post needs: view the channel, send messages, attach files and embed links)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newChecker()
			f.lacks = tc.lacks
			c := &explainingChecker{fakeChecker: f, lack: tc.lack, err: tc.err}
			d := validDef()
			d.Embed = &Embed{Title: "Digest"}
			got := d.Validate(context.Background(), enabled, c)
			if len(got) != 1 || got[FieldDestinations] != tc.want {
				t.Fatalf("Validate = %v, want %s: %q", got, FieldDestinations, tc.want)
			}
		})
	}
	// The run-time refusal reads the same, ending in "this message needs".
	f := newChecker()
	c := &explainingChecker{fakeChecker: f}
	if got, want := refusal(context.Background(), c, testGuild, testOwner, 100, NeedFiles, "the owner 7", "this message needs"),
		"the owner 7 cannot post in channel 100 (this message needs: view the channel, send messages and attach files)"; got != want {
		t.Fatalf("refusal = %q, want %q", got, want)
	}
	c.lack = map[[2]uint64]Lack{{testOwner, 100}: {Permissions: []string{"Attach Files"}, Channel: "general"}}
	if got, want := refusal(context.Background(), c, testGuild, testOwner, 100, NeedFiles, "the owner 7", "this message needs"),
		"the owner 7 lacks Attach Files in #general"; got != want {
		t.Fatalf("refusal = %q, want %q", got, want)
	}
}
