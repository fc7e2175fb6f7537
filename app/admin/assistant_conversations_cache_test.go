package admin

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/web/templates"
)

// TestConversationRegionsRenderWhatChanged: a kept render is reused only
// for a view equal to the one it came from; a view differing in any shown
// field (a row's name, its relative time, the next link) renders afresh,
// including after more views than are kept.
func TestConversationRegionsRenderWhatChanged(t *testing.T) {
	ctx := context.Background()
	var r conversationRegions
	row := templates.ConversationRow{ID: "1", URL: "/assistant/conversations/1", Guild: "Tea Garden", Channel: "#general",
		Owner: "ada", Started: "2 minutes ago", Active: "1 minute ago", Turns: "1", Status: "done", StatusKind: "success", Tokens: "10"}
	list := func(mod func(*templates.ConversationRow), next string) templates.ConversationsList {
		rr := row
		if mod != nil {
			mod(&rr)
		}
		return templates.ConversationsList{Rows: []templates.ConversationRow{rr}, NextURL: next}
	}
	for _, tt := range []struct {
		name string
		v    templates.ConversationsList
		want string
	}{
		{"first", list(nil, ""), "Tea Garden"},
		{"the same again", list(nil, ""), "Tea Garden"},
		{"a guild renamed", list(func(r *templates.ConversationRow) { r.Guild = "Coffee House" }, ""), "Coffee House"},
		{"time went on", list(func(r *templates.ConversationRow) { r.Active = "3 minutes ago" }, ""), "3 minutes ago"},
		{"a next page", list(nil, "/assistant/conversations?after=5-1"), "after=5-1"},
		{"back to the first", list(nil, ""), "1 minute ago"},
	} {
		html, err := r.render(ctx, tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(html, tt.want) {
			t.Errorf("%s: render lacks %q", tt.name, tt.want)
		}
		if tt.name != "a next page" && strings.Contains(html, "after=") {
			t.Errorf("%s: render has the next page's link", tt.name)
		}
	}
	for i := range 2 * conversationRegionsKept {
		name := "guild-" + strconv.Itoa(i)
		html, err := r.render(ctx, list(func(r *templates.ConversationRow) { r.Guild = name }, ""))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(html, ">"+name+"<") {
			t.Fatalf("view %d rendered as another's", i)
		}
	}
	if len(r.kept) != conversationRegionsKept {
		t.Errorf("%d renders kept, want at most %d", len(r.kept), conversationRegionsKept)
	}
}
