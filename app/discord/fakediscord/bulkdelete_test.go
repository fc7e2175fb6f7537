package fakediscord

import (
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestBulkDeleteAsUser: a member's purge removes the named messages the
// channel holds (an id it no longer holds is left out of the dispatch),
// dispatches one MESSAGE_DELETE_BULK and records an audit entry naming
// the member; Discord's limits (2 to 100 ids, none older than 14 days)
// and a non-member are refused, changing nothing.
func TestBulkDeleteAsUser(t *testing.T) {
	w := newWorld(t, Options{})
	s := w.fake.Session()
	s.Identify.Intents = discordgo.IntentsAll
	bulk := make(chan *discordgo.MessageDeleteBulk, 4)
	s.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageDeleteBulk) { bulk <- e })
	ev := events(s)
	open(t, s)
	until(t, ev, "GUILD_CREATE")
	var ids []string
	for _, c := range []string{"a", "b", "c"} {
		m, err := w.fake.PostMessage(w.text, w.alice, c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	old := "175928847299117063" // a snowflake of 2016
	carol := w.fake.AddUser(discordgo.User{Username: "carol"}).ID
	for _, tc := range []struct {
		name, user string
		ids        []string
		want       string
	}{
		{"one id", w.bob, ids[:1], "at least 2"},
		{"too many", w.bob, slices.Repeat(ids[:1], 101), "at most 100"},
		{"too old", w.bob, []string{ids[0], old}, "older than 14 days"},
		{"not a member", carol, ids[:2], ErrNotMember.Error()},
	} {
		if err := w.fake.BulkDeleteAsUser(w.text, tc.user, tc.ids); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	if n := len(w.fake.Messages(w.text)); n != 3 {
		t.Fatalf("the refused purges left %d messages, want 3", n)
	}

	gone, err := w.fake.PostMessage(w.text, w.alice, "gone before the purge")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.fake.DeleteAsUser(w.text, gone.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.fake.BulkDeleteAsUser(w.text, w.bob, []string{ids[1], ids[0], gone.ID}); err != nil {
		t.Fatal(err)
	}
	got := recv(t, bulk, "MESSAGE_DELETE_BULK")
	if got.ChannelID != w.text || got.GuildID != w.guild || !slices.Equal(got.Messages, []string{ids[1], ids[0]}) {
		t.Fatalf("dispatched %+v, want %v in %s", got, ids[:2], w.text)
	}
	left := w.fake.Messages(w.text)
	if len(left) != 1 || left[0].ID != ids[2] {
		t.Fatalf("left %d messages, want only %s", len(left), ids[2])
	}
	audit := w.fake.AuditLog(w.guild)
	if len(audit) == 0 || audit[0].UserID != w.bob || audit[0].ActionType == nil ||
		*audit[0].ActionType != discordgo.AuditLogActionMessageBulkDelete || audit[0].TargetID != w.text {
		t.Fatalf("newest audit entry = %+v, want bob's bulk delete in %s", audit[0], w.text)
	}
	select {
	case e := <-bulk:
		t.Fatalf("a second MESSAGE_DELETE_BULK: %+v", e)
	default:
	}
}

// TestBulkDeleteRefusesDuplicateIDs: Discord answers a bulk delete that
// names a message twice with 400 (50035, "The set already contains this
// value") and deletes nothing — through the REST route as through a
// member's purge.
func TestBulkDeleteRefusesDuplicateIDs(t *testing.T) {
	w := newWorld(t, Options{})
	var ids []string
	for _, c := range []string{"a", "b"} {
		m, err := w.fake.PostMessage(w.text, w.alice, c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	dup := []string{ids[0], ids[1], ids[0]}
	if err := w.fake.BulkDeleteAsUser(w.text, w.bob, dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a member's purge naming %s twice: error %v, want one saying twice", ids[0], err)
	}
	_, err := w.rest().RequestWithBucketID("POST", discordgo.EndpointChannelMessagesBulkDelete(w.text), map[string][]string{"messages": dup}, "")
	if re := wantAPIError(t, err, 400, CodeInvalidFormBody); !strings.Contains(string(re.ResponseBody), "SET_TYPE_ALREADY_CONTAINS_VALUE") {
		t.Errorf("body %s, want messages.2's SET_TYPE_ALREADY_CONTAINS_VALUE", re.ResponseBody)
	}
	if n := len(w.fake.Messages(w.text)); n != 2 {
		t.Fatalf("the refused bulk deletes left %d messages, want 2", n)
	}
}
