package llmfake

import (
	"net/http"
)

// Text answers with the text, one delta per part.
func Text(parts ...string) Plan { return Plan{Content: parts} }

// ToolCall answers with one call, its name first and its arguments (a JSON
// text) in three fragments.
func ToolCall(id, name, args string) Plan {
	return Plan{Calls: []Call{{ID: id, Name: name, Args: Split3(args)}}}
}

// Split3 cuts s into three fragments (some may be empty for a short s).
func Split3(s string) []string {
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}

// HTTPFailure answers status before any chunk, with an OpenAI-shaped error.
func HTTPFailure(status int, errType, message string) Plan {
	return Plan{Status: status, ErrorType: errType, ErrorMessage: message}
}

// RateLimited is a 429; retryAfter ("" for none) is its Retry-After.
func RateLimited(retryAfter string) Plan {
	p := HTTPFailure(http.StatusTooManyRequests, "rate_limit_reached_error", "Your account reached its rate limit; please try again later.")
	p.RetryAfter = retryAfter
	return p
}

// ContextLength is Moonshot's context-overflow 400.
func ContextLength() Plan {
	return HTTPFailure(http.StatusBadRequest, "invalid_request_error",
		"Invalid request: Your request exceeded model token limit: 262144 (requested: 270000)")
}

// Stall is silence: after the headers and a first delta, or (headers false)
// from the start.
func Stall(headers bool) Plan {
	if headers {
		return Plan{Content: []string{"partial ", "never sent"}, Fail: FailStall}
	}
	return Plan{Fail: FailStallBeforeHeaders}
}

// Dropped sends some text, then drops the connection.
func Dropped() Plan { return Plan{Content: []string{"partial"}, Fail: FailDrop} }

// MidStreamError sends some text, then an {"error": …} event.
func MidStreamError() Plan { return Plan{Content: []string{"partial"}, Fail: FailMidStream} }
