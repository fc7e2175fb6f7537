package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrConnection: the provider could not be reached, or the connection
	// dropped before the answer ended.
	ErrConnection = errors.New("llm: the connection to the model provider failed")
	// ErrTimeout: the whole request took longer than Options.Timeout.
	ErrTimeout = errors.New("llm: the request to the model took longer than its timeout")
)

// Classify is the original agent's failure policy (provider_failure_disposition)
// and the user-facing category of err:
//
//   - Retry (once after 2 s, then the fallback): 408, 425, 429 without
//     Retry-After, any 5xx, connection errors, stalls, the request timeout,
//     a mid-stream error event;
//   - Failover at once: 401, 404, a 429 with Retry-After, an address the
//     transport refuses on policy (a PolicyRefusal: a setting to change,
//     not a transient failure);
//   - Stop: 400, 403, 422, a context overflow, a cancelled request, an
//     invalid request, a malformed or oversized answer, anything else.
//
// 401, 403, 404, a refused address and a missing configuration are OutcomeUnavailable, 429 is
// OutcomeBusy, the transient failures and a cooldown are OutcomeDown, the
// rest OutcomeInternal. Classify(nil) is (0, 0).
func Classify(err error) (Disposition, Outcome) {
	if err == nil {
		return 0, 0
	}
	var he *HTTPError
	switch {
	case errors.Is(err, ErrContextOverflow):
		return Stop, OutcomeInternal
	case errors.Is(err, ErrNotConfigured):
		return Stop, OutcomeUnavailable
	case errors.Is(err, ErrCoolingDown):
		return Stop, OutcomeDown
	case errors.As(err, &he):
		return classifyHTTP(he)
	case isPolicyRefusal(err):
		return Failover, OutcomeUnavailable
	case errors.Is(err, ErrStall), errors.Is(err, ErrTimeout), errors.Is(err, ErrConnection):
		return Retry, OutcomeDown
	}
	return Stop, OutcomeInternal
}

// PolicyRefusal is implemented by a transport's error for an address it
// refuses to connect to on policy (app/egress's AddressRefusedError).
type PolicyRefusal interface {
	error
	// PolicyRefusal reports whether the refusal is the policy's.
	PolicyRefusal() bool
}

func isPolicyRefusal(err error) bool {
	var r PolicyRefusal
	return errors.As(err, &r) && r.PolicyRefusal()
}

func classifyHTTP(e *HTTPError) (Disposition, Outcome) {
	if e.MidStream {
		return Retry, OutcomeDown
	}
	switch s := e.Status; {
	case s == http.StatusTooManyRequests && e.RetryAfter > 0:
		return Failover, OutcomeBusy
	case s == http.StatusTooManyRequests:
		return Retry, OutcomeBusy
	case s == http.StatusRequestTimeout, s == http.StatusTooEarly, s >= 500 && s <= 599:
		return Retry, OutcomeDown
	case s == http.StatusUnauthorized, s == http.StatusNotFound:
		return Failover, OutcomeUnavailable
	case s == http.StatusForbidden:
		return Stop, OutcomeUnavailable
	}
	return Stop, OutcomeInternal
}

// maxErrorBody is how much of an error answer the client reads; maxLogged
// how much of it (redacted) goes to the debug log.
const (
	maxErrorBody = 64 << 10
	maxLogged    = 2 << 10
	maxField     = 512
)

// overflowTexts are the phrases of a context-overflow error (Moonshot's and
// OpenAI's invalid_request_error, vLLM, llama.cpp, Ollama).
var overflowTexts = []string{
	"context length", "context_length", "maximum context", "context window",
	"exceeded model token limit", "exceeds the model's", "too many tokens",
	"prompt is too long", "context size",
}

// httpError builds the typed error of a non-200 answer, its message
// scrubbed of the key. A context overflow comes back wrapped in
// ErrContextOverflow.
func httpError(status int, h http.Header, body []byte, rd redactor, now time.Time) error {
	e := &HTTPError{Status: status, RetryAfter: retryAfter(h.Get("Retry-After"), now)}
	e.Type, e.Message = errorFields(body, rd)
	if isOverflow(status, e.Message) {
		return fmt.Errorf("%w: %w", ErrContextOverflow, e)
	}
	return e
}

func isOverflow(status int, msg string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge && status != http.StatusUnprocessableEntity && status != 0 {
		return false
	}
	low := strings.ToLower(msg)
	return slices.ContainsFunc(overflowTexts, func(t string) bool { return strings.Contains(low, t) })
}

// errorFields reads the OpenAI shape {"error": {"type", "message", "code"}}
// (or a bare {"error": "text"}, or {"message": …}); each field redacted and
// cut short.
func errorFields(body []byte, rd redactor) (typ, msg string) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(body, &top) != nil {
		return "", ""
	}
	typ, msg = top.Type, top.Message
	if len(top.Error) > 0 {
		var inner struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
		}
		if json.Unmarshal(top.Error, &inner) == nil {
			typ, msg = inner.Type, inner.Message
			if typ == "" && len(inner.Code) > 0 {
				typ = strings.Trim(string(inner.Code), `"`)
			}
		} else {
			_ = json.Unmarshal(top.Error, &msg)
		}
	}
	return rd.Field(typ, 64), rd.Field(msg, maxField)
}

// retryAfter parses a Retry-After header (seconds or an HTTP date); a
// present, valid header is at least a second, so "Retry-After: 0" still
// counts as present.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		d = time.Duration(min(n, 24*3600)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = min(t.Sub(now), 24*time.Hour)
	} else {
		return 0
	}
	return max(d, time.Second)
}

// transportError wraps a failure to send or read: a stall or the request
// timeout when the watchdog or the deadline ended it, the caller's own
// cancellation as is, anything else as ErrConnection with a redacted text
// (net/http quotes a malformed answer's bytes in its errors).
func transportError(ctx context.Context, err error, rd redactor) error {
	if cause := context.Cause(ctx); cause != nil {
		switch {
		case errors.Is(cause, ErrStall):
			return ErrStall
		case errors.Is(cause, ErrTimeout):
			return ErrTimeout
		default:
			return cause
		}
	}
	return &redactedError{msg: "llm: the connection to the model provider failed: " + rd.Field(err.Error(), maxField), err: errors.Join(ErrConnection, err)}
}

// redactedError is an error whose message passed the redactor; Unwrap
// keeps the cause for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

var _ error = (*redactedError)(nil)
