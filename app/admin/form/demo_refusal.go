package form

import "errors"

// The demo's chat (app/demo's adapter over the fake Discord) and the /demo forms share these
// two refusals: the adapter returns them, the handlers show them on the form (FieldForm).

// ErrDemoUnknown is a channel or member id that is not in the demo guild: a form named one the
// page does not offer (the handlers answer 404 for a page, a form error for a POST).
var ErrDemoUnknown = errors.New("form: demo: not in the demo guild")

// DemoRefusal is an interaction the demo guild refused, in a sentence for the visitor (the
// message is gone, the component or command is not there, a value is not offered, ...),
// shown as the form's message.
type DemoRefusal string

func (r DemoRefusal) Error() string { return "form: demo: " + string(r) }

var _ error = DemoRefusal("")
