// Package form holds one type per admin POST form, as Miniflux's ui/form does.
// Each form owns its field names (exported constants that the handler and the
// templ template both use), is built from the request by its Parse function,
// and reports what a person must correct through Validate as Errors keyed by
// field name — handlers never read field names themselves and never trim
// error strings to show them.
//
// The package knows nothing of echo: Parse functions take the *http.Request
// (the body is already bounded by the admin's body-limit middleware).
package form

import (
	"net/http"

	"github.com/kimiapp/kimi/app/auth"
)

// FieldForm is the key of a page-level message in Errors: one that belongs to
// the whole form rather than to one field (shown above the form).
const FieldForm = "form"

// Errors maps a field name (or FieldForm) to the sentence shown beside it.
// A nil or empty Errors means the form is valid.
type Errors map[string]string

// Add records msg for field unless the field already has a message (the
// first problem found is the one shown).
func (e *Errors) Add(field, msg string) {
	if *e == nil {
		*e = Errors{}
	}
	if _, ok := (*e)[field]; !ok {
		(*e)[field] = msg
	}
}

// Has reports whether field has a message.
func (e Errors) Has(field string) bool { _, ok := e[field]; return ok }

// Get returns field's message, "" when it has none.
func (e Errors) Get(field string) string { return e[field] }

// OK reports whether there are no messages.
func (e Errors) OK() bool { return len(e) == 0 }

// value returns the named form value of r (POST body first, as
// http.Request.FormValue does).
func value(r *http.Request, name string) string { return r.FormValue(name) }

// checked reports whether a checkbox named name was submitted ticked.
func checked(r *http.Request, name string) bool { return r.FormValue(name) != "" }

// add records the sentence of a refusal err (an *auth.UserError) for field.
func (e *Errors) add(field string, err error) {
	msg, ok := auth.UserMessage(err)
	if !ok {
		// Not a sentence meant for a person: say something true and
		// generic rather than show an internal error text.
		msg = "This value is not valid."
	}
	e.Add(field, msg)
}

// refusal is Errors holding err's sentence for field.
func refusal(field string, err error) Errors {
	var e Errors
	e.add(field, err)
	return e
}
