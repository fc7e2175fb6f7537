package form

import "net/http"

// FieldConfirm is the field that confirms a destructive action: the first
// POST of such a form (without it) only shows a confirmation page, whose
// button posts the same form again with FieldConfirm=ConfirmYes. Sign-out
// other sessions and the Worldtree removal carry no other field than this
// (and the CSRF token, which the middleware owns), so they need no form
// type of their own; neither does POST /logout, which carries only the
// token.
const (
	FieldConfirm = "confirm"
	ConfirmYes   = "yes"
)

// Confirmed reports whether r confirms its destructive action. Only the
// exact value ConfirmYes in the POST body counts (not the query string, so
// a link cannot carry it).
func Confirmed(r *http.Request) bool {
	return r.PostFormValue(FieldConfirm) == ConfirmYes
}
