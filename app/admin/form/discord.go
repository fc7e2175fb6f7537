package form

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/settings"
)

// Field names of the /discord forms, shared by discord.templ and the
// handlers.
const (
	DiscordToken          = settings.FieldDiscordToken // POST /discord/token
	DiscordMembers        = "members"                  // POST /discord/intents
	DiscordMessageContent = "message_content"          // POST /discord/intents
	DiscordCacheMessages  = settings.FieldDiscordCacheMessages
	DiscordCacheMembers   = settings.FieldDiscordCacheMembers
)

// Page-level messages of refused /discord forms.
const (
	MsgDiscordTokenNotSaved = "The bot token was not saved. Correct the field marked below."
	MsgDiscordCacheNotSaved = "The cache sizes were not saved. Correct the fields marked below."
)

// DiscordTokenForm is the submitted bot token (POST /discord/token). The
// token is a secret: it is never put back into a page.
type DiscordTokenForm struct {
	Token string // normalized: trimmed, without a "Bot " prefix
}

// ParseDiscordToken reads the form from r.
func ParseDiscordToken(r *http.Request) DiscordTokenForm {
	return DiscordTokenForm{Token: settings.NormalizeDiscordToken(value(r, DiscordToken))}
}

// Validate checks the token's shape; whether Discord accepts it is the
// handler's live check.
func (f DiscordTokenForm) Validate() Errors {
	var e Errors
	if msg := settings.DiscordTokenProblem(f.Token); msg != "" {
		e.Add(DiscordToken, msg)
		e.Add(FieldForm, MsgDiscordTokenNotSaved)
	}
	return e
}

// DiscordIntentsForm is the operator's choice of privileged intents
// (POST /discord/intents); an unticked box is off.
type DiscordIntentsForm struct {
	Members        bool
	MessageContent bool
	Confirmed      bool // the confirmation page's "Yes": saving reconnects the bot
}

// ParseDiscordIntents reads the form from r.
func ParseDiscordIntents(r *http.Request) DiscordIntentsForm {
	return DiscordIntentsForm{Members: checked(r, DiscordMembers), MessageContent: checked(r, DiscordMessageContent), Confirmed: Confirmed(r)}
}

// DiscordCacheForm is the cache sizes (POST /discord/cache); blank is 0,
// the default.
type DiscordCacheForm struct {
	MessagesRaw, MembersRaw string
	Messages, Members       int
}

// ParseDiscordCache reads the form from r.
func ParseDiscordCache(r *http.Request) DiscordCacheForm {
	return DiscordCacheForm{MessagesRaw: strings.TrimSpace(value(r, DiscordCacheMessages)), MembersRaw: strings.TrimSpace(value(r, DiscordCacheMembers))}
}

// Validate parses and bounds the sizes (settings.CacheProblems), filling
// Messages and Members.
func (f *DiscordCacheForm) Validate() Errors {
	var e Errors
	for _, x := range []struct {
		raw, field string
		out        *int
	}{{f.MessagesRaw, DiscordCacheMessages, &f.Messages}, {f.MembersRaw, DiscordCacheMembers, &f.Members}} {
		if x.raw == "" {
			*x.out = 0
			continue
		}
		n, err := strconv.Atoi(x.raw)
		if err != nil {
			e.Add(x.field, "Enter a whole number (0 for the default).")
			continue
		}
		*x.out = n
	}
	if e.OK() {
		if pe := settings.CacheProblems(f.Messages, f.Members); pe != nil {
			for k, v := range pe.Fields {
				e.Add(k, v)
			}
		}
	}
	if !e.OK() {
		e.Add(FieldForm, MsgDiscordCacheNotSaved)
	}
	return e
}
