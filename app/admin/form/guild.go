package form

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// Field names shared by every guild form: the revision the page was
// rendered from, posted back so a save is a compare-and-swap on it.
const (
	GuildExpectedRevision = "expected_revision"
	// GuildModule names the module whose document a revert targets ("" for
	// the server-setup document).
	GuildModule = "module"
)

// Field names of the add-a-guild form (POST /guilds).
const GuildID = "guild_id"

// Field names of the server-setup form (POST /guilds/{id}/setup): the
// document's own keys, so guildcfg's ValidationError.Fields() maps onto
// them as they are.
const (
	GuildBotActive         = guildcfg.KeyBotActive
	GuildStaffUserIDs      = guildcfg.KeyStaffUserIDs
	GuildStaffRoleIDs      = guildcfg.KeyStaffRoleIDs
	GuildRegularRoleIDs    = guildcfg.KeyRegularRoleIDs
	GuildAllowedChannelIDs = guildcfg.KeyAllowedChannelIDs
	GuildProposalChannelID = guildcfg.KeyProposalChannelID
	GuildTasksEnabled      = guildcfg.KeyScheduledTasks + "." + guildcfg.TaskKeyEnabled
	GuildTasksMinTier      = guildcfg.KeyScheduledTasks + "." + guildcfg.TaskKeyMinTier
	GuildTasksTimezone     = guildcfg.KeyScheduledTasks + "." + guildcfg.TaskKeyTimezone
	GuildTasksDestinations = guildcfg.KeyScheduledTasks + "." + guildcfg.TaskKeyDestinations
	GuildAssistantEnabled  = guildcfg.KeyAssistant + "." + guildcfg.AssistantKeyEnabled
	GuildAssistantMinTier  = guildcfg.KeyAssistant + "." + guildcfg.AssistantKeyMinTier
	GuildAssistantBlocked  = guildcfg.KeyAssistant + "." + guildcfg.KeyBlockedTools
	GuildAssistantPinned   = guildcfg.KeyAssistant + "." + guildcfg.KeyPinnedTools
	// GuildAssistantDailyTokens is the guild's daily token budget ("":
	// the assistant's default).
	GuildAssistantDailyTokens = guildcfg.KeyAssistant + "." + guildcfg.AssistantKeyDailyTokens
)

// Choices of the assistant's enabled select: AssistantDefault leaves the
// key out of the document (on once a model provider is configured).
const (
	AssistantDefault = "default"
	AssistantOn      = "on"
	AssistantOff     = "off"
)

// Field names of the raw document form (POST /guilds/{id}/document).
const GuildDocumentText = "text"

// Messages of refused guild forms.
const (
	MsgGuildNotSaved       = "Nothing was saved. Correct the fields marked below."
	MsgGuildConflict       = "This document changed since you opened it, so your changes were not saved. The form now shows the current version; your version is kept below to copy from."
	MsgGuildRevertConflict = "This document changed since you opened its history, so nothing was reverted. The history below is current; choose again."
	MsgGuildRevision       = "This form is missing the revision it was opened at. Reload the page and try again."
	MsgGuildIDInvalid      = "Enter the guild's Discord id: 1 to 20 digits, no sign or spaces, greater than 0."
	MsgGuildExtraKeys      = "The stored document is invalid, has settings this form does not show, or has comments it would drop; edit the raw document below instead, so nothing is lost."
	MsgGuildTimezone       = "Enter an IANA time zone such as Europe/Berlin."
	msgRevisionPattern     = `\A[0-9a-f]{64}\z`
)

var revisionRE = regexp.MustCompile(msgRevisionPattern)

// checkRevision requires the full 64-hex revision guildcfg's Write takes.
func checkRevision(e *Errors, rev string) {
	if !revisionRE.MatchString(rev) {
		e.Add(FieldForm, MsgGuildRevision)
	}
}

// GuildAdd is the "add a guild by id" form.
type GuildAdd struct {
	ID string
}

// ParseGuildAdd reads the form from r.
func ParseGuildAdd(r *http.Request) GuildAdd {
	return GuildAdd{ID: strings.TrimSpace(value(r, GuildID))}
}

// Target is the guild's server-setup document; ok is false when the id is
// not valid (Validate says why).
func (f GuildAdd) Target() (guildcfg.Target, bool) {
	t, err := guildcfg.ParseTarget("guild:" + f.ID)
	return t, err == nil
}

// Validate accepts a Discord id: ASCII digits only, no sign, > 0, fitting
// 64 bits.
func (f GuildAdd) Validate() Errors {
	var e Errors
	if _, ok := f.Target(); !ok {
		e.Add(GuildID, MsgGuildIDInvalid)
	}
	return e
}

// GuildSetup is the server-setup form: the documented keys, the id lists
// as picked and typed (one id per line).
type GuildSetup struct {
	BotActive         bool
	StaffUserIDs      string
	StaffRoleIDs      string
	RegularRoleIDs    string
	AllowedChannelIDs string
	ProposalChannelID string
	TasksEnabled      bool
	TasksMinTier      string
	TasksTimezone     string
	TasksDestinations string
	// AssistantEnabled is AssistantDefault, AssistantOn or AssistantOff;
	// the tool lists are as typed (one name per line).
	AssistantEnabled      string
	AssistantMinTier      string
	AssistantBlockedTools string
	AssistantPinnedTools  string
	// AssistantDailyTokens is the daily token budget as typed ("": the
	// default).
	AssistantDailyTokens string
	ExpectedRevision     string
}

// ParseGuildSetup reads the form from r.
func ParseGuildSetup(r *http.Request) GuildSetup {
	return GuildSetup{
		BotActive:             checked(r, GuildBotActive),
		StaffUserIDs:          pickedIDs(r, GuildStaffUserIDs),
		StaffRoleIDs:          pickedIDs(r, GuildStaffRoleIDs),
		RegularRoleIDs:        pickedIDs(r, GuildRegularRoleIDs),
		AllowedChannelIDs:     pickedIDs(r, GuildAllowedChannelIDs),
		ProposalChannelID:     pickedID(r, GuildProposalChannelID),
		TasksEnabled:          checked(r, GuildTasksEnabled),
		TasksMinTier:          strings.TrimSpace(value(r, GuildTasksMinTier)),
		TasksTimezone:         strings.TrimSpace(value(r, GuildTasksTimezone)),
		TasksDestinations:     pickedIDs(r, GuildTasksDestinations),
		AssistantEnabled:      strings.TrimSpace(value(r, GuildAssistantEnabled)),
		AssistantMinTier:      strings.TrimSpace(value(r, GuildAssistantMinTier)),
		AssistantBlockedTools: value(r, GuildAssistantBlocked),
		AssistantPinnedTools:  value(r, GuildAssistantPinned),
		AssistantDailyTokens:  strings.ReplaceAll(strings.TrimSpace(value(r, GuildAssistantDailyTokens)), ",", ""),
		ExpectedRevision:      strings.TrimSpace(value(r, GuildExpectedRevision)),
	}
}

// MsgGuildAssistantEnabled refuses an enabled choice the select does not
// offer.
const MsgGuildAssistantEnabled = "Choose the default, on or off."

// Validate checks what guildcfg cannot: the revision the form carries and
// the enabled choice. Every other value is guildcfg's to judge (Document
// then Refused).
func (f GuildSetup) Validate() Errors {
	var e Errors
	checkRevision(&e, f.ExpectedRevision)
	switch f.AssistantEnabled {
	case "", AssistantDefault, AssistantOn, AssistantOff:
	default:
		e.Add(FieldForm, MsgGuildNotSaved)
		e.Add(GuildAssistantEnabled, MsgGuildAssistantEnabled)
	}
	return e
}

// Document renders the form as a server-setup document ending in body
// (the stored document's text after its frontmatter, kept as it is). Each
// value is written so that YAML reads exactly what was typed: ids of
// plain ASCII digits bare, anything else as a quoted string, which
// guildcfg then refuses with its own message for the field ("… contains
// a non-numeric id '+5'"). No input can add a key or break the syntax.
func (f GuildSetup) Document(body string) string {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString(GuildBotActive + ": " + boolText(f.BotActive) + "\n")
	idList(&b, GuildStaffUserIDs, f.StaffUserIDs)
	idList(&b, GuildStaffRoleIDs, f.StaffRoleIDs)
	idList(&b, GuildRegularRoleIDs, f.RegularRoleIDs)
	idList(&b, GuildAllowedChannelIDs, f.AllowedChannelIDs)
	if f.ProposalChannelID != "" {
		b.WriteString(GuildProposalChannelID + ": " + idToken(f.ProposalChannelID) + "\n")
	}
	dest := SplitIDs(f.TasksDestinations)
	tier, tz := f.TasksMinTier, f.TasksTimezone
	if f.TasksEnabled || (tier != "" && tier != "staff") || (tz != "" && tz != "UTC") || len(dest) > 0 {
		b.WriteString(guildcfg.KeyScheduledTasks + ":\n")
		b.WriteString("  " + guildcfg.TaskKeyEnabled + ": " + boolText(f.TasksEnabled) + "\n")
		if tier != "" {
			b.WriteString("  " + guildcfg.TaskKeyMinTier + ": " + quote(tier) + "\n")
		}
		if tz != "" {
			b.WriteString("  " + guildcfg.TaskKeyTimezone + ": " + quote(tz) + "\n")
		}
		if len(dest) > 0 {
			b.WriteString("  " + guildcfg.TaskKeyDestinations + ": " + flowList(dest, idToken) + "\n")
		}
	}
	f.assistantBlock(&b)
	b.WriteString("---\n")
	b.WriteString(body)
	return b.String()
}

// assistantBlock writes the assistant mapping when the form sets anything
// beyond the defaults; tool names are always quoted, so guildcfg judges
// each as typed.
func (f GuildSetup) assistantBlock(b *strings.Builder) {
	blocked, pinned := SplitNames(f.AssistantBlockedTools), SplitNames(f.AssistantPinnedTools)
	tier := f.AssistantMinTier
	on := f.AssistantEnabled == AssistantOn || f.AssistantEnabled == AssistantOff
	if !on && (tier == "" || tier == "member") && len(blocked) == 0 && len(pinned) == 0 && f.AssistantDailyTokens == "" {
		return
	}
	b.WriteString(guildcfg.KeyAssistant + ":\n")
	if on {
		b.WriteString("  " + guildcfg.AssistantKeyEnabled + ": " + boolText(f.AssistantEnabled == AssistantOn) + "\n")
	}
	if tier != "" {
		b.WriteString("  " + guildcfg.AssistantKeyMinTier + ": " + quote(tier) + "\n")
	}
	if len(blocked) > 0 {
		b.WriteString("  " + guildcfg.KeyBlockedTools + ": " + flowList(blocked, quote) + "\n")
	}
	if len(pinned) > 0 {
		b.WriteString("  " + guildcfg.KeyPinnedTools + ": " + flowList(pinned, quote) + "\n")
	}
	if f.AssistantDailyTokens != "" {
		// Digits bare, anything else quoted: guildcfg refuses it as no
		// integer.
		b.WriteString("  " + guildcfg.AssistantKeyDailyTokens + ": " + idToken(f.AssistantDailyTokens) + "\n")
	}
}

// GuildErrors maps a refusal of guildcfg (Validate, Write, Revert) to the
// form's fields: a *ValidationError's problems by key, a whole-document
// problem to documentField (FieldForm: appended to the page-level
// message), a *ConflictError to MsgGuildConflict. Any other error is not
// the form's and yields nil.
func GuildErrors(err error, documentField string) Errors {
	var verr *guildcfg.ValidationError
	var conflict *guildcfg.ConflictError
	switch {
	case errors.As(err, &conflict):
		return Errors{FieldForm: MsgGuildConflict}
	case !errors.As(err, &verr):
		return nil
	}
	e := Errors{}
	top := MsgGuildNotSaved
	for field, msg := range verr.Fields() {
		if field == guildcfg.DocumentField {
			if documentField == FieldForm {
				top += " " + msg
				continue
			}
			field = documentField
		}
		e.Add(field, msg)
	}
	e[FieldForm] = top
	return e
}

// GuildDocument is the raw-text form of any guild document.
type GuildDocument struct {
	Text             string
	ExpectedRevision string
}

// ParseGuildDocument reads the form from r. The text is taken as sent:
// browsers submit textarea line breaks as CRLF, which become LF so the
// stored document does not change at every save.
func ParseGuildDocument(r *http.Request) GuildDocument {
	return GuildDocument{
		Text:             strings.ReplaceAll(value(r, GuildDocumentText), "\r\n", "\n"),
		ExpectedRevision: strings.TrimSpace(value(r, GuildExpectedRevision)),
	}
}

// Validate checks the revision; the text is guildcfg's to judge.
func (f GuildDocument) Validate() Errors {
	var e Errors
	checkRevision(&e, f.ExpectedRevision)
	return e
}

// GuildRevert is the revert-to-this-revision form of a history entry.
type GuildRevert struct {
	Module           string
	ExpectedRevision string
}

// ParseGuildRevert reads the form from r.
func ParseGuildRevert(r *http.Request) GuildRevert {
	return GuildRevert{Module: strings.TrimSpace(value(r, GuildModule)),
		ExpectedRevision: strings.TrimSpace(value(r, GuildExpectedRevision))}
}

// Validate checks the revision.
func (f GuildRevert) Validate() Errors {
	var e Errors
	checkRevision(&e, f.ExpectedRevision)
	return e
}

// SplitIDs splits an id textarea into its entries: one per line (commas
// and spaces separate too, for pasted lists), blanks dropped.
func SplitIDs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == '\n' || r == '\r' || r == ',' || r == ' ' || r == '\t'
	})
}

// SplitNames splits a textarea of names into its entries: one per line
// (commas separate too), each trimmed, blanks dropped. A space inside an
// entry stays, so a name typed with one is refused rather than split.
func SplitNames(s string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// JoinIDs renders ids one per line, for a textarea.
func JoinIDs(ids []string) string { return strings.Join(ids, "\n") }

var digitsRE = regexp.MustCompile(`\A[0-9]{1,25}\z`)

// idToken writes an id entry bare when it is plain digits, else quoted
// (guildcfg refuses it, naming the entry).
func idToken(s string) string {
	if digitsRE.MatchString(s) {
		return s
	}
	return quote(s)
}

func idList(b *strings.Builder, key, text string) {
	ids := SplitIDs(text)
	if len(ids) == 0 {
		return
	}
	b.WriteString(key + ": " + flowList(ids, idToken) + "\n")
}

func flowList(items []string, token func(string) string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = token(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// quote renders s as a YAML double-quoted scalar: JSON's escapes, plus
// \uXXXX for the characters YAML may not hold unescaped (DEL, C1 controls,
// surrogates, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF). Invalid UTF-8
// becomes U+FFFD, so the quoted text is always a valid scalar.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func boolText(v bool) string {
	if v {
		return "true"
	}
	return "false"
}
