package form

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Field names of the proposals inbox's filter form (GET /proposals), shared
// by proposals.templ and the list handler; the live region's address
// carries the same names.
const (
	ProposalState  = "state"
	ProposalGuild  = "guild"
	ProposalModule = "module"
	ProposalTarget = "target"
	// ProposalAfter is the keyset cursor of the page (the service's
	// Page.Next of the previous one).
	ProposalAfter = "after"
)

// Field names of the decision forms (POST /proposals/{id}/approve and
// /reject).
const ProposalReason = "reason"

// MaxProposalReasonLength bounds a rejection's reason (characters, trimmed):
// it is shown on the Discord card's Decision field (≤ 1024 characters with
// the decider's mention).
const MaxProposalReasonLength = 500

// Messages of refused proposal forms.
const (
	MsgProposalState    = "Choose pending, applied, rejected or rolled back (or all states)."
	MsgProposalGuild    = "Enter the guild's Discord id: 1 to 20 digits, greater than 0."
	MsgProposalModule   = "Enter a module name: a lowercase letter, then up to 63 lowercase letters, digits, - or _."
	MsgProposalTarget   = "Enter a target such as guild:123, channel:456 or guild:123:kudos."
	MsgProposalCursor   = "The page cursor is not valid. Go back to the newest page."
	MsgProposalReason   = "Say why you reject it: the reason is shown on the Discord card and in the history (1 to 500 characters)."
	MsgProposalFiltered = "The filters were not applied. Correct the fields marked below."
)

var (
	proposalModuleRE = regexp.MustCompile(`\A[a-z][a-z0-9_-]{0,63}\z`)
	proposalCursorRE = regexp.MustCompile(`\A[A-Za-z0-9_.:=-]{1,200}\z`)
)

// ProposalFilter is the inbox's filter form, as typed (trimmed).
type ProposalFilter struct {
	State, Guild, Module, Target, After string
}

// ParseProposalFilter reads the filter form from r's query.
func ParseProposalFilter(r *http.Request) ProposalFilter {
	q := r.URL.Query()
	get := func(name string) string { return clipRunes(strings.TrimSpace(q.Get(name)), 300) }
	return ProposalFilter{State: get(ProposalState), Guild: get(ProposalGuild), Module: get(ProposalModule),
		Target: get(ProposalTarget), After: get(ProposalAfter)}
}

// Validate checks every field; nil when the filter can be used.
func (f ProposalFilter) Validate() Errors {
	var e Errors
	switch sdk.ProposalState(f.State) {
	case "", sdk.ProposalPending, sdk.ProposalApplied, sdk.ProposalRejected, sdk.ProposalRolledBack:
	default:
		e.Add(ProposalState, MsgProposalState)
	}
	if f.Guild != "" {
		if _, ok := parseID(f.Guild); !ok {
			e.Add(ProposalGuild, MsgProposalGuild)
		}
	}
	if f.Module != "" && !proposalModuleRE.MatchString(f.Module) {
		e.Add(ProposalModule, MsgProposalModule)
	}
	if f.Target != "" {
		if _, err := guildcfg.ParseTarget(f.Target); err != nil {
			e.Add(ProposalTarget, MsgProposalTarget)
		}
	}
	if f.After != "" && !proposalCursorRE.MatchString(f.After) {
		e.Add(ProposalAfter, MsgProposalCursor)
	}
	if !e.OK() {
		e.Add(FieldForm, MsgProposalFiltered)
	}
	return e
}

// GuildID is the guild filter (0: every guild); call after Validate.
func (f ProposalFilter) GuildID() uint64 {
	id, _ := parseID(f.Guild)
	return id
}

// Filtered reports whether any filter but the page cursor is set.
func (f ProposalFilter) Filtered() bool {
	return f.State != "" || f.Guild != "" || f.Module != "" || f.Target != ""
}

// Query is the filter as a query string (without "?"), the cursor included
// when withCursor; "" when empty.
func (f ProposalFilter) Query(withCursor bool) string {
	q := url.Values{}
	for name, v := range map[string]string{ProposalState: f.State, ProposalGuild: f.Guild, ProposalModule: f.Module, ProposalTarget: f.Target} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if withCursor && f.After != "" {
		q.Set(ProposalAfter, f.After)
	}
	return q.Encode()
}

// parseID reads a positive Discord id of 1 to 20 digits.
func parseID(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil && id > 0
}

// ProposalReject is the reject form (POST /proposals/{id}/reject).
type ProposalReject struct {
	Reason string
}

// ParseProposalReject reads the reject form from r.
func ParseProposalReject(r *http.Request) ProposalReject {
	return ProposalReject{Reason: strings.TrimSpace(strings.ReplaceAll(value(r, ProposalReason), "\r\n", "\n"))}
}

// Validate requires a reason of 1 to MaxProposalReasonLength characters
// without control characters other than line breaks and tabs.
func (f ProposalReject) Validate() Errors {
	n := utf8.RuneCountInString(f.Reason)
	bad := n == 0 || n > MaxProposalReasonLength || !utf8.ValidString(f.Reason) ||
		strings.ContainsFunc(f.Reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' })
	if bad {
		return Errors{ProposalReason: MsgProposalReason}
	}
	return nil
}

// KeptReason is the reason to show again in a refused form (clipped, so a
// huge paste is not echoed whole).
func (f ProposalReject) KeptReason() string { return clipRunes(f.Reason, 2*MaxProposalReasonLength) }

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
