package worldtree

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// DescribeError returns a clear, operator-facing sentence for err, naming what to fix where it
// can (a missing scope names the scope). It never contains a key or a response body. nil -> "".
func DescribeError(err error) string {
	if err == nil {
		return ""
	}
	var (
		scope         *AuthScopeDeniedError
		notConfigured *PersonaNotConfiguredError
		notAvailable  *AgentNotAvailableError
		notFound      *AgentNotFoundError
		cursor        *InvalidCursorError
		handshake     *BifrostHandshakeFailedError
		failed        *SessionAPIFailedError
		urlErr        *url.Error
	)
	switch {
	case errors.As(err, &scope):
		return fmt.Sprintf("The Worldtree API key lacks the %q scope. Grant it to the key in Worldtree, or configure a key that has it.", scope.Scope)
	case errors.As(err, &notConfigured):
		return fmt.Sprintf("Agent %q has no persona configured on Worldtree, so it has no live persona state.", notConfigured.AgentID)
	case errors.As(err, &notAvailable):
		return fmt.Sprintf("Agent %q is not available on this Worldtree server.", notAvailable.AgentID)
	case errors.As(err, &notFound):
		return fmt.Sprintf("Worldtree has no agent %q. Check the agent id against the agent list.", notFound.AgentID)
	case errors.As(err, &cursor):
		return "This page of sessions is no longer valid (Worldtree rejected the cursor). Start again from the first page."
	case errors.Is(err, ErrBifrostConsumerKeyMissing):
		return "A Bifrost-bound session needs a consumer key of its own (never the default key). Set the Worldtree consumer key in Settings."
	case errors.As(err, &handshake):
		if handshake.BifrostError == "bifrost.auth_rejected" {
			return "Worldtree could not connect to the Bifrost tool server: Bifrost rejected the consumer key (bifrost.auth_rejected). Check the Worldtree consumer key in Settings."
		}
		return fmt.Sprintf("Worldtree could not connect to the Bifrost tool server (%s). Check that Bifrost is running and reachable from Worldtree.",
			quoteCode(handshake.BifrostError))
	case errors.As(err, &failed):
		return describeStatus(failed)
	case errors.Is(err, ErrResponseTooLarge):
		return "Worldtree sent a response larger than this client accepts. Check that the base URL points at the Worldtree API."
	case errors.Is(err, ErrUnexpectedContentType):
		return "Worldtree answered with something other than JSON (for example an HTML page). Check that the base URL points at the Worldtree API, not a web page or a proxy login."
	case errors.Is(err, ErrMalformedResponse):
		return "Worldtree sent a response this client cannot read. The server may run an incompatible version."
	case errors.Is(err, ErrUnknownPlane):
		return "Unknown Bifrost plane. Use memory, affect or combined."
	case errors.Is(err, ErrInvalidArgument):
		return "The request was refused before it was sent: " + err.Error() + "."
	case errors.Is(err, context.DeadlineExceeded):
		return "Worldtree did not answer in time. Check that the server is up and reachable."
	case errors.Is(err, context.Canceled):
		return "The request to Worldtree was cancelled."
	case errors.As(err, &urlErr):
		return "Could not reach the Worldtree server (" + reachProblem(urlErr) + "). Check the base URL and that the server is running."
	}
	return "The Worldtree request failed: " + err.Error()
}

// describeStatus explains a generic failure by status and error code.
func describeStatus(e *SessionAPIFailedError) string {
	code := e.Code
	switch {
	case e.Status >= 300 && e.Status < 400:
		return fmt.Sprintf("Worldtree answered with a redirect (status %d), which this client does not follow. Check the base URL (http or https, path prefix).", e.Status)
	case e.Status == http.StatusUnauthorized:
		if isAdminPath(e.Path) {
			return "Worldtree rejected the admin key (401). Check the Worldtree admin key in Settings."
		}
		return "Worldtree rejected the API key (401). Check the Worldtree default key in Settings."
	case e.Status == http.StatusForbidden:
		s := scopeFromBody(e.Body)
		if s == "" {
			s = scopeFor(e.Method, e.Path)
		}
		if s != "" {
			return fmt.Sprintf("The Worldtree key lacks the %q scope this request needs (403). Grant it to the key in Worldtree.", s)
		}
		return fmt.Sprintf("Worldtree refused the request (403%s): the key lacks a scope it needs.", codeSuffix(code))
	case e.Status == http.StatusNotFound && code == "session_not_found":
		return "The session was not found. It may have been deleted or belong to another owner."
	case e.Status == http.StatusNotFound && code == "session_not_bifrost_bound":
		return "The session is not bound to a Bifrost tool server."
	case e.Status == http.StatusNotFound:
		return fmt.Sprintf("Worldtree has no such resource: %s %s (404%s).", e.Method, e.Path, codeSuffix(code))
	case e.Status == http.StatusUnprocessableEntity && code == "ephemeral_does_not_accept_bifrost":
		return "Ephemeral templates cannot be bound to Bifrost. Choose a named agent for a Bifrost-bound session."
	case e.Status == http.StatusUnprocessableEntity:
		return fmt.Sprintf("Worldtree refused the request as invalid (422%s).", codeSuffix(code))
	case e.Status == http.StatusTooManyRequests:
		return "Worldtree is rate-limiting requests (429). Try again later."
	case e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout:
		return fmt.Sprintf("Worldtree, or a proxy in front of it, is unavailable (status %d). Try again later.", e.Status)
	case e.Status >= 500:
		return fmt.Sprintf("Worldtree had a server error (status %d%s). See the Worldtree logs.", e.Status, codeSuffix(code))
	}
	return fmt.Sprintf("Worldtree answered %s %s with status %d%s.", e.Method, e.Path, e.Status, codeSuffix(code))
}

// isAdminPath reports whether an escaped request path is the client's one /admin endpoint,
// .../admin/sessions/{id}/bifrost. The whole endpoint is matched, not any "/admin/" in the path,
// since a base URL may itself sit under an /admin/ prefix. An id is one escaped segment, so it
// cannot fake the shape.
func isAdminPath(path string) bool {
	i := strings.LastIndex(path, "/admin/sessions/")
	if i < 0 || !strings.HasSuffix(path, "/bifrost") {
		return false
	}
	id := strings.TrimSuffix(path[i+len("/admin/sessions/"):], "/bifrost")
	return id != "" && !strings.Contains(id, "/")
}

// scopeFor names the scope an endpoint needs, where the contract says so.
func scopeFor(method, path string) string {
	switch {
	case isAdminPath(path):
		return "admin.sessions.read"
	case method == http.MethodGet && strings.HasSuffix(path, "/persona_state") && strings.Contains(path, "/agents/"):
		return PersonaReadScope
	case strings.HasSuffix(path, "/models/available-for-characters"):
		return "character.read"
	case strings.Contains(path, "/characters"):
		if method == http.MethodGet {
			return "character.read"
		}
		return "character.write"
	// The conversation scopes are named by the contract but not tied to endpoints by the seed:
	// reading sessions needs conversations.read, creating one conversations.write (inferred).
	case strings.HasSuffix(path, "/sessions") && method == http.MethodPost:
		return "conversations.write"
	case method == http.MethodGet && (strings.HasSuffix(path, "/sessions") ||
		(strings.Contains(path, "/sessions/") && strings.HasSuffix(path, "/tools"))):
		return "conversations.read"
	}
	return ""
}

// scopeInMessage finds a scope name ("conversations.read") after the word "scope" in a server
// message such as "Missing required scope: persona.read".
// Scope names are lowercase words joined by dots (admin.sessions.read); anything else, a key
// echoed into the message say, is not taken for one.
var scopeInMessage = regexp.MustCompile(`(?i:\bscopes?\b)[^A-Za-z0-9<]{0,3}([a-z][a-z_]*(?:\.[a-z_]+)+)\b`)

// scopeFromBody returns the scope a 403 body names in its message (flat, in the detail
// envelope, or as a string detail), or "" when it names none.
func scopeFromBody(body []byte) string {
	top := rawObject(body)
	if top == nil {
		return ""
	}
	msgs := []string{rawString(top["message"]), rawString(top["detail"])}
	if d := rawObject(top["detail"]); d != nil {
		msgs = append(msgs, rawString(d["message"]))
	}
	for _, m := range msgs {
		if sub := scopeInMessage.FindStringSubmatch(m); sub != nil && len(sub[1]) <= 64 {
			return sub[1]
		}
	}
	return ""
}

// codeSuffix renders ", error code x" for a printable code, else "".
func codeSuffix(code string) string {
	if c := printableCode(code); c != "" {
		return ", error code " + c
	}
	return ""
}

// quoteCode renders a server-sent code for a sentence, or "no detail" when it is not printable.
func quoteCode(code string) string {
	if c := printableCode(code); c != "" {
		return c
	}
	return "no detail"
}

// reachProblem names the network failure briefly (e.g. "connection refused").
func reachProblem(e *url.Error) string {
	var dnsErr *net.DNSError
	if errors.As(e, &dnsErr) {
		return "host not found"
	}
	var opErr *net.OpError
	if errors.As(e, &opErr) && opErr.Err != nil {
		msg := opErr.Err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return msg
	}
	return "network error"
}
