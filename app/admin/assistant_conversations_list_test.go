package admin

import (
	"html"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/store"
)

// serverLog is the harness server's own conversation log (its Watch is the
// one the live list follows).
func serverLog(t *testing.T, h *harness) *assistant.Conversations {
	t.Helper()
	log, ok := h.srv.opts.Conversations.(*assistant.Conversations)
	if !ok {
		t.Fatal("the harness server has no *assistant.Conversations")
	}
	return log
}

var convRowRE = regexp.MustCompile(`data-testid="conversation-(\d+)"`)

// listedIDs are the conversation ids of a list page, in order.
func listedIDs(body string) []string {
	var out []string
	for _, m := range convRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

var nextRE = regexp.MustCompile(`href="([^"]+)" rel="next"`)

// TestAssistantConversationsPagingAndFilters: 30 conversations page 25
// then 5 through the cursor, newest first, without repeats; each filter
// (guild, channel, user, status, tool errors) keeps exactly its rows, on
// the page and in its next link.
func TestAssistantConversationsPagingAndFilters(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	log := serverLog(t, h)
	var all []string                // newest first
	byWant := map[string][]string{} // filter query → ids, newest first
	for i := range 30 {
		g, ch, user := uint64(100+i%3), uint64(1000+i%5), uint64(5000+i%2)
		outcome, status := assistant.OutcomeOK, assistant.StatusDone
		if i%7 == 0 {
			outcome, status = assistant.OutcomeTimeout, assistant.StatusFailed
		}
		conv := seedTurn(t, log, assistant.Place{GuildID: g, ChannelID: ch}, uint64(i+1), user, "p"+strconv.Itoa(i), outcome, status)
		id := strconv.FormatInt(conv.ID, 10)
		all = append([]string{id}, all...)
		for _, q := range []struct {
			key string
			ok  bool
		}{{"guild=101", g == 101}, {"channel=1003", ch == 1003}, {"user=5001", user == 5001},
			{"status=failed", status == assistant.StatusFailed}, {"tool_errors=1", outcome != assistant.OutcomeOK},
			{"guild=100&user=5000", g == 100 && user == 5000}} {
			if q.ok {
				byWant[q.key] = append([]string{id}, byWant[q.key]...)
			}
		}
	}
	// Paging.
	res := c.get("/assistant/conversations")
	wantStatus(t, res, http.StatusOK)
	first := listedIDs(res.body)
	m := nextRE.FindStringSubmatch(res.body)
	if len(first) != 25 || m == nil || strings.Contains(res.body, `data-testid="page-first"`) {
		t.Fatalf("first page: %d rows, next %v", len(first), m)
	}
	res = c.get(html.UnescapeString(m[1]))
	wantStatus(t, res, http.StatusOK)
	second := listedIDs(res.body)
	if got := slices.Concat(first, second); !slices.Equal(got, all) {
		t.Errorf("pages = %v, want %v", got, all)
	}
	if nextRE.MatchString(res.body) || !strings.Contains(res.body, `data-testid="page-first"`) {
		t.Error("the last page links on, or not back to the newest")
	}
	// Filters.
	for q, want := range byWant {
		t.Run(q, func(t *testing.T) {
			res := c.get("/assistant/conversations?" + q)
			wantStatus(t, res, http.StatusOK)
			if got := listedIDs(res.body); !slices.Equal(got, want) {
				t.Errorf("ids = %v, want %v", got, want)
			}
			if !strings.Contains(res.body, `data-live="/assistant/conversations/events?`) {
				t.Error("the live region does not carry the filter")
			}
		})
	}
	if len(byWant) != 6 {
		t.Fatalf("only %d filters have rows: %v", len(byWant), byWant)
	}
	// A filter matching nothing says so.
	res = c.get("/assistant/conversations?guild=999")
	wantBody(t, res, "No matching conversations")
}

// TestAssistantConversationEvents: the live list sends the page when it
// opens, then again after a turn begins and after it ends, with the
// filter applied; and after a delete.
func TestAssistantConversationEvents(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	log := serverLog(t, h)
	kept := seedTurn(t, log, assistant.Place{GuildID: 5, ChannelID: 50}, 1, 7, "one", assistant.OutcomeOK, assistant.StatusDone)
	events, _ := openStream(t, c, "/assistant/conversations/events?guild=5")
	if first := readEvent(t, events); !strings.Contains(first, `data-testid="conversation-`+strconv.FormatInt(kept.ID, 10)+`"`) {
		t.Fatalf("first fragment: %.600s", first)
	}
	ctx := t.Context()
	tr := assistant.Trigger{Place: assistant.Place{GuildID: 5, ChannelID: 50}, Kind: assistant.KindMessage, MessageID: 2, AuthorID: 8, Text: "x"}
	conv, err := log.Open(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := log.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	row := `data-testid="conversation-` + strconv.FormatInt(conv.ID, 10) + `"`
	for ev := readEvent(t, events); !strings.Contains(ev, row) || !strings.Contains(ev, ">running<"); ev = readEvent(t, events) {
	}
	if err := log.FinishTurn(ctx, turn, assistant.Finish{Status: assistant.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	for ev := readEvent(t, events); !strings.Contains(ev, ">cancelled<"); ev = readEvent(t, events) {
	}
	// Another guild's turn is filtered out of the region.
	seedTurn(t, log, assistant.Place{GuildID: 6, ChannelID: 60}, 3, 7, "other", assistant.OutcomeOK, assistant.StatusDone)
	if err := log.Delete(ctx, conv.ID, store.AuditEntry{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	for ev := readEvent(t, events); strings.Contains(ev, row); ev = readEvent(t, events) {
		if strings.Contains(ev, "SEEDQUESTION-other") || strings.Contains(ev, ">60<") {
			t.Fatal("another guild's conversation in the filtered region")
		}
	}
}
