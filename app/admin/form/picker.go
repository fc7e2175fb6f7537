package form

import (
	"net/http"
	"slices"
	"strings"
)

// A picker (a channel, role or member field) posts its name more than once:
// the options chosen in its select and what was typed or pasted in its
// search box beside it (an id, or an id the bot cannot see). The parsers
// below turn those values back into the field's text as the handlers
// always had it, so the stored values stay ids and guildcfg and tasks judge
// them as before.

// values returns every value posted under name, body first, as
// http.Request.Form holds them.
func values(r *http.Request, name string) []string {
	if r.Form == nil {
		_ = r.ParseMultipartForm(MaxUploadMemory) // falls back to ParseForm
	}
	return r.Form[name]
}

// pickedIDs is a list picker's ids, one per line: every chosen option and
// every id typed in the search box (commas and spaces separate too), in
// the order posted, each once.
func pickedIDs(r *http.Request, name string) string {
	var ids []string
	for _, v := range values(r, name) {
		for _, id := range SplitIDs(v) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return JoinIDs(ids)
}

// pickedID is a single picker's id: what was typed in the search box when
// anything was (it follows the select in the page, so it is posted last),
// else the chosen option.
func pickedID(r *http.Request, name string) string {
	vs := values(r, name)
	for i := len(vs) - 1; i >= 0; i-- {
		if v := strings.TrimSpace(vs[i]); v != "" {
			return v
		}
	}
	return ""
}

// MemberSearchQuery is the member search's query parameter (GET
// /guilds/{id}/members/search?q=).
const MemberSearchQuery = "q"

// MaxMemberSearchQuery bounds the query, in bytes: no Discord name is
// longer than 32 characters.
const MaxMemberSearchQuery = 100

// MsgMemberSearchQuery refuses a query past MaxMemberSearchQuery.
const MsgMemberSearchQuery = "The search is too long: type the start of a member's name."

// MemberSearch is the member picker's search: the start of a name.
type MemberSearch struct {
	Q string
}

// ParseMemberSearch reads the query from r.
func ParseMemberSearch(r *http.Request) MemberSearch {
	return MemberSearch{Q: strings.TrimSpace(r.URL.Query().Get(MemberSearchQuery))}
}

// Validate refuses a query too long to be the start of a name.
func (f MemberSearch) Validate() Errors {
	var e Errors
	if len(f.Q) > MaxMemberSearchQuery {
		e.Add(MemberSearchQuery, MsgMemberSearchQuery)
	}
	return e
}
