package worldtree

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// MaxErrorBodyBytes is how much of an error response body the typed errors keep (the contract's
// SessionApiFailed.body is the first 1024 bytes of the raw body).
const MaxErrorBodyBytes = 1024

// Sentinel errors. Compare with errors.Is.
var (
	// ErrInvalidArgument marks a precondition that failed before any request was sent
	// (the contract's AssertionError): an empty id, an empty cursor, a limit out of bounds.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrBifrostConsumerKeyMissing is returned (wrapped) when a Bifrost-bound CreateSession has
	// no consumer key. It is the *BifrostConsumerKeyMissingError value, so both errors.Is and
	// errors.As match it. No request is sent: the default key is never a fallback.
	ErrBifrostConsumerKeyMissing error = &BifrostConsumerKeyMissingError{}

	// ErrResponseTooLarge is returned when a response body exceeds the client's size cap.
	ErrResponseTooLarge = errors.New("response body too large")

	// ErrUnexpectedContentType is returned when a success response that should carry JSON
	// declares another content type (for example an HTML page from a proxy).
	ErrUnexpectedContentType = errors.New("unexpected content type")

	// ErrMalformedResponse is returned when a success response is not the JSON shape the
	// contract describes (invalid JSON, an array where an object belongs, a missing field).
	ErrMalformedResponse = errors.New("malformed response")

	// ErrUnknownPlane is returned by EndpointForPlane for a plane other than memory, affect or
	// combined (the contract's ValueError).
	ErrUnknownPlane = errors.New("unknown bifrost plane")
)

// Interface guards: every typed error is an error.
var (
	_ error = (*SessionAPIFailedError)(nil)
	_ error = (*AgentNotFoundError)(nil)
	_ error = (*AgentNotAvailableError)(nil)
	_ error = (*PersonaNotConfiguredError)(nil)
	_ error = (*AuthScopeDeniedError)(nil)
	_ error = (*InvalidCursorError)(nil)
	_ error = (*BifrostConsumerKeyMissingError)(nil)
	_ error = (*BifrostHandshakeFailedError)(nil)
)

// SessionAPIFailedError is the generic failure (the contract's SessionApiFailed): any status
// other than the endpoint's exact success status that no more specific error claims.
type SessionAPIFailedError struct {
	// Method and Path identify the request (the path is escaped and relative to the host).
	Method string
	Path   string
	// Status is the HTTP status code received.
	Status int
	// Code is the error_code the server sent, flat or inside {"detail": {...}}; "" if none.
	Code string
	// Body is the raw response body cut to its first MaxErrorBodyBytes bytes, with any key
	// sent on the request redacted. It is never part of Error().
	Body []byte
}

// Error describes the failure without the body, so it is safe to log.
func (e *SessionAPIFailedError) Error() string {
	msg := fmt.Sprintf("session API failed: %s %s: status %d", e.Method, e.Path, e.Status)
	if c := printableCode(e.Code); c != "" {
		msg += fmt.Sprintf(" (error_code %q)", c)
	}
	return msg
}

// AgentNotFoundError is returned by CreateSession on 404 (the server's unknown_agent_id).
type AgentNotFoundError struct {
	// AgentID is the agent id the caller passed.
	AgentID string
}

// Error reports the unknown agent.
func (e *AgentNotFoundError) Error() string {
	return fmt.Sprintf("agent not found: %q", e.AgentID)
}

// AgentNotAvailableError is returned by GetPersonaState on 404 agent_not_available.
type AgentNotAvailableError struct {
	// AgentID is the agent id the caller passed.
	AgentID string
}

// Error reports the unavailable agent.
func (e *AgentNotAvailableError) Error() string {
	return fmt.Sprintf("agent not available: %q", e.AgentID)
}

// PersonaNotConfiguredError is returned by GetPersonaState on 404 persona_not_configured: the
// agent exists but has no persona surface (e.g. domari, muninn).
type PersonaNotConfiguredError struct {
	// AgentID is the agent id the caller passed.
	AgentID string
}

// Error reports the agent without persona state.
func (e *PersonaNotConfiguredError) Error() string {
	return fmt.Sprintf("persona not configured for agent %q", e.AgentID)
}

// AuthScopeDeniedError is returned by GetPersonaState on 403 auth_scope_denied. Scope is fixed by
// the endpoint (persona.read), not parsed from the server's message.
type AuthScopeDeniedError struct {
	// Scope is the API key scope the call needs.
	Scope string
}

// Error names the missing scope.
func (e *AuthScopeDeniedError) Error() string {
	return fmt.Sprintf("auth scope denied: the key lacks scope %q", e.Scope)
}

// InvalidCursorError is returned by ListSessions on 422 cursor_invalid.
type InvalidCursorError struct {
	// Raw is the cursor the caller passed ("" if none was passed).
	Raw string
}

// Error reports the rejected cursor.
func (e *InvalidCursorError) Error() string {
	return fmt.Sprintf("invalid cursor %q", truncateString(e.Raw, 128))
}

// BifrostConsumerKeyMissingError is the precondition failure of a Bifrost-bound CreateSession
// without a non-empty consumer key. The only value is ErrBifrostConsumerKeyMissing.
type BifrostConsumerKeyMissingError struct{}

// Error reports the missing key.
func (e *BifrostConsumerKeyMissingError) Error() string {
	return "bifrost consumer key missing"
}

// BifrostHandshakeFailedError is returned by CreateSession on 502 with detail.bifrost_error:
// Worldtree could not complete the bind-time handshake with the Bifrost tool server.
type BifrostHandshakeFailedError struct {
	// BifrostError is the server's detail.bifrost_error, e.g. "bifrost.auth_rejected" (the
	// tell of a wrong consumer key), with any key sent on the request redacted.
	BifrostError string
	// Body is the raw response body, cut to MaxErrorBodyBytes and redacted like
	// SessionAPIFailedError.Body.
	Body []byte
}

// Error reports the Bifrost error.
func (e *BifrostHandshakeFailedError) Error() string {
	return fmt.Sprintf("bifrost handshake failed: %q", truncateString(e.BifrostError, 128))
}

// errorInfo is what the client reads from an error body: FastAPI puts it in {"detail": {...}},
// some handlers answer flat, and some send a string detail.
type errorInfo struct {
	code         string
	bifrostError string
}

// parseErrorInfo extracts error_code (flat first, then detail.error_code) and the Bifrost error.
// The seed's flat handshake body is {"error_code": ..., "detail": {"bifrost_error": ...}}; inside
// FastAPI's envelope the same body becomes {"detail": {"error_code": ..., "detail":
// {"bifrost_error": ...}}}, so the Bifrost error is read from detail.bifrost_error, then
// detail.detail.bifrost_error. Any other shape (a string detail, no detail, invalid JSON, an
// array) yields empty fields and never fails: the caller falls back to the generic error.
func parseErrorInfo(body []byte) errorInfo {
	top := rawObject(body)
	if top == nil {
		return errorInfo{}
	}
	var info errorInfo
	info.code = rawString(top["error_code"])
	if detail := rawObject(top["detail"]); detail != nil {
		if info.code == "" {
			info.code = rawString(detail["error_code"])
		}
		info.bifrostError = rawString(detail["bifrost_error"])
		if info.bifrostError == "" {
			info.bifrostError = rawString(rawObject(detail["detail"])["bifrost_error"])
		}
	}
	return info
}

// rawObject decodes raw as a JSON object, or returns nil for anything else.
func rawObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// rawString decodes raw as a JSON string, or returns "" for anything else.
func rawString(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// codePattern is the shape of a server error code that is safe to print in an error string.
var codePattern = regexp.MustCompile(`\A[A-Za-z0-9_.:-]{1,64}\z`)

// printableCode returns code if it looks like an error code, else "" (a server could put
// anything in the field; Error() must stay a short, safe line).
func printableCode(code string) string {
	if codePattern.MatchString(code) {
		return code
	}
	return ""
}

// truncateString cuts s to at most n bytes, marking the cut.
func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// redacted is what a key is replaced with in server-provided text.
const redacted = "[REDACTED]"

// redactor removes the configured keys from server-provided text before it reaches an error. A
// server may echo the Authorization header into anything it sends (a body, an error code, a
// Content-Type, an id), so every server string that an error keeps or prints passes through it,
// whatever the key's length: a one-character key is redacted too. The zero redactor has no keys.
type redactor struct {
	keys []string // non-empty, distinct, longest first
	r    *strings.Replacer
}

// newRedactor returns a redactor for keys; empty keys are ignored.
func newRedactor(keys ...string) redactor {
	var ks []string
	for _, k := range keys {
		if k != "" && !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return redactor{}
	}
	// Longest first: strings.Replacer tries its pairs in order at each position, so a key that
	// contains a shorter one is replaced whole.
	slices.SortStableFunc(ks, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(ks))
	for _, k := range ks {
		pairs = append(pairs, k, redacted)
	}
	return redactor{keys: ks, r: strings.NewReplacer(pairs...)}
}

// String replaces every occurrence of every key in s in one pass, so no occurrence of s survives
// (each one is replaced, or overlaps one that was). A key with a bracket could still be formed
// anew around a marker ("D]x" from "D]xx"); then the whole string is the marker. A key that is
// part of the marker itself ("E") can only show as the marker.
func (rd redactor) String(s string) string {
	if rd.r == nil {
		return s
	}
	out := rd.r.Replace(s)
	for _, k := range rd.keys {
		if strings.Contains(out, k) && !strings.Contains(redacted, k) {
			return redacted
		}
	}
	return out
}

// Bytes is String for a body; the result is a copy.
func (rd redactor) Bytes(b []byte) []byte {
	return []byte(rd.String(string(b)))
}

// Body redacts keys from the full body, then cuts it to MaxErrorBodyBytes, so no part of a key
// survives the cut. The result is a copy.
func (rd redactor) Body(b []byte) []byte {
	s := rd.String(string(b))
	if len(s) > MaxErrorBodyBytes {
		s = s[:MaxErrorBodyBytes]
	}
	// A copy of the cut alone: a slice of the whole redacted body would keep all of it (up to
	// the client's 4 MiB cap) alive for as long as the error is kept.
	return []byte(s)
}

// Field redacts a short server-sent string an error prints, then cuts it to n bytes.
func (rd redactor) Field(s string, n int) string {
	return truncateString(rd.String(s), n)
}

// jsonProblem describes a JSON decoding failure without the decoder's message, which quotes the
// input (a *json.SyntaxError names the offending character, an *json.UnmarshalTypeError the
// literal): a server echoing a key as the body would get it into the error.
func jsonProblem(err error, rd redactor) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte offset %d", syntax.Offset)
	case errors.As(err, &typ):
		msg := fmt.Sprintf("a JSON value has the wrong type (want %s) at byte offset %d", typ.Type, typ.Offset)
		if typ.Field != "" {
			msg = fmt.Sprintf("field %q has the wrong type (want %s)", rd.Field(typ.Field, 128), typ.Type)
		}
		return msg
	}
	return "invalid JSON"
}

// redactedError is a transport failure whose message passed the redactor (net/http quotes a
// malformed response's bytes in its errors). Unwrap keeps the cause for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

// Error is the redacted message.
func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the cause.
func (e *redactedError) Unwrap() error { return e.err }

var _ error = (*redactedError)(nil)
