package form

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Field names of the /assistant/conversations filter (GET) and of the
// Show transcripts switch (POST /assistant/transcripts), shared by
// assistant_conversations.templ and the handlers.
const (
	ConversationsGuild      = "guild"
	ConversationsChannel    = "channel"
	ConversationsUser       = "user"
	ConversationsStatus     = "status"
	ConversationsToolErrors = "tool_errors"
	ConversationsAfter      = "after"
	// AssistantTranscripts is the switch's state asked for: "on" or "off".
	AssistantTranscripts = "transcripts"
)

// Messages of a refused conversations filter or switch.
const (
	MsgConversationsID         = "Enter a Discord id (digits only), or leave it empty."
	MsgConversationsStatus     = "Choose running, done, failed, interrupted or cancelled (or every status)."
	MsgConversationsCursor     = "The page cursor is not valid. Go back to the newest page."
	MsgAssistantTranscriptsBad = "Choose whether transcripts are shown (on or off)."
)

// conversationStatuses are the filter's values (app/assistant's Status
// constants; the form package knows nothing of the assistant).
var conversationStatuses = []string{"running", "done", "failed", "interrupted", "cancelled"}

var conversationsCursorRE = regexp.MustCompile(`\A[0-9]{1,19}-[0-9]{1,19}\z`)

// ConversationsFilter is the conversation log's filter
// (GET /assistant/conversations?guild=&channel=&user=&status=&tool_errors=1&after=).
type ConversationsFilter struct {
	Guild, Channel, User, Status string
	ToolErrors                   bool
	After                        string
}

// ParseConversationsFilter reads the filter from r's query.
func ParseConversationsFilter(r *http.Request) ConversationsFilter {
	q := r.URL.Query()
	get := func(k string) string { return clipRunes(strings.TrimSpace(q.Get(k)), 64) }
	return ConversationsFilter{Guild: get(ConversationsGuild), Channel: get(ConversationsChannel), User: get(ConversationsUser),
		Status: get(ConversationsStatus), ToolErrors: q.Get(ConversationsToolErrors) != "", After: get(ConversationsAfter)}
}

// Validate checks each id (a positive decimal Discord id), the status and
// the cursor's form.
func (f ConversationsFilter) Validate() Errors {
	var e Errors
	for _, id := range []struct{ field, v string }{{ConversationsGuild, f.Guild}, {ConversationsChannel, f.Channel}, {ConversationsUser, f.User}} {
		if id.v == "" {
			continue
		}
		if n, err := strconv.ParseUint(id.v, 10, 64); err != nil || n == 0 {
			e.Add(id.field, MsgConversationsID)
		}
	}
	if f.Status != "" && !contains(conversationStatuses, f.Status) {
		e.Add(ConversationsStatus, MsgConversationsStatus)
	}
	if f.After != "" && !conversationsCursorRE.MatchString(f.After) {
		e.Add(ConversationsAfter, MsgConversationsCursor)
	}
	return e
}

// IDs are the validated filter's ids (0 for none); call after Validate.
func (f ConversationsFilter) IDs() (guild, channel, user uint64) {
	p := func(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }
	return p(f.Guild), p(f.Channel), p(f.User)
}

// Filtered reports whether any filter (not the cursor) is set.
func (f ConversationsFilter) Filtered() bool {
	return f.Guild != "" || f.Channel != "" || f.User != "" || f.Status != "" || f.ToolErrors
}

// Query is the filter as a query string (without "?"), the cursor
// included when withCursor; "" when empty.
func (f ConversationsFilter) Query(withCursor bool) string {
	q := url.Values{}
	for k, v := range map[string]string{ConversationsGuild: f.Guild, ConversationsChannel: f.Channel, ConversationsUser: f.User, ConversationsStatus: f.Status} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.ToolErrors {
		q.Set(ConversationsToolErrors, "1")
	}
	if withCursor && f.After != "" {
		q.Set(ConversationsAfter, f.After)
	}
	return q.Encode()
}

// AssistantTranscriptsSwitch is the Show transcripts switch
// (POST /assistant/transcripts): the state asked for, and whether the
// confirmation step was passed.
type AssistantTranscriptsSwitch struct {
	Value     string
	Confirmed bool
}

// ParseAssistantTranscripts reads the switch from r's body.
func ParseAssistantTranscripts(r *http.Request) AssistantTranscriptsSwitch {
	return AssistantTranscriptsSwitch{Value: strings.TrimSpace(r.PostFormValue(AssistantTranscripts)), Confirmed: Confirmed(r)}
}

// Validate checks the state is on or off.
func (f AssistantTranscriptsSwitch) Validate() Errors {
	var e Errors
	if f.Value != "on" && f.Value != "off" {
		e.Add(AssistantTranscripts, MsgAssistantTranscriptsBad)
	}
	return e
}

// On reports whether the switch asks for transcripts shown.
func (f AssistantTranscriptsSwitch) On() bool { return f.Value == "on" }
