// Package worldtree is a client for the Worldtree session API, the multi-agent conversation
// server that the Ratatoskr client targets.
//
// It implements §3 of shared/reference/worldtree-contract.md (derived from Ratatoskr's
// tests/test_sessions.py): one method per endpoint, exact request bodies (keys omitted versus
// sent as null), exact success statuses, defaults for null fields, preconditions checked before
// any request, and typed errors usable with errors.As / errors.Is.
//
// # Credentials
//
// A Client carries one default bearer key. Two calls replace it for that request only, and never
// fall back to it:
//   - CreateSession with a Bifrost binding sends the consumer key (WithBifrost); an empty
//     consumer key, or one equal to the default key, fails with ErrBifrostConsumerKeyMissing
//     before any request;
//   - GetSessionBifrost (an /admin endpoint) sends the admin key.
//
// Every request builds its own Authorization header; the shared *http.Client holds no auth
// state, so an override cannot leak into a later or concurrent request.
//
// Passthrough reads (GetMe, GetCapabilities, GetSessionTools, GetSessionBifrost,
// GetPersonaState and the character calls) return the server's JSON object verbatim as
// encoding/json decodes it into map[string]any (numbers are float64). Timestamps stay ISO-8601
// strings.
//
// # Safety
//
//   - Redirects are never followed. A 3xx answer is returned as a *SessionAPIFailedError. The
//     API is plain REST, so a redirect means a misconfigured base URL (http vs https, a proxy
//     login page); following it could carry the key to another host or downgrade it to
//     plaintext.
//   - Every call runs under a deadline (WithTimeout, default 30 s) on top of the caller's ctx.
//   - Response bodies are read through an io.LimitReader (WithMaxResponseBytes, default 4 MiB).
//     A larger success body fails with ErrResponseTooLarge; a larger error body still yields
//     its status and first 1024 bytes as a *SessionAPIFailedError.
//   - A success body must be JSON: a declared non-JSON Content-Type (an HTML login page, say)
//     fails with ErrUnexpectedContentType, and a body that is not the contract's shape with
//     ErrMalformedResponse. A missing Content-Type is tolerated.
//   - Ids are escaped one path segment each; "." and ".." are refused, so an id cannot reach
//     another endpoint (in particular an /admin one).
//   - No key appears in an error string or a log line. Every server-provided string an error
//     keeps or prints (error code, Bifrost error, Content-Type, an id of a malformed item,
//     net/http's quote of a malformed response) first has every key the client knows replaced
//     by [REDACTED], whatever its length, one character included: the key sent, the default
//     key and the WithRedactedKeys keys (the settings pass the admin and consumer keys). JSON
//     decoding errors are rewritten ("invalid JSON at byte offset N"), never the decoder's
//     message, which quotes the input. Raw bodies are kept in fields (redacted, then cut to
//     1024 bytes) and never in Error().
//   - Request bodies are compact JSON without HTML escaping (& < > go out as themselves).
//   - Error codes are read flat and from FastAPI's {"detail": {...}} envelope, the Bifrost
//     error from detail.bifrost_error or, enveloped, detail.detail.bifrost_error. The Client's String/GoString and
//     slog value do not print the key, and base URLs with user info are refused.
//
// # Open points of the contract
//
// The server's page-size maximum is not known (MaxSessionsLimit is 200, inside the proven
// [10, 299]). The turn/message and SSE stream endpoints are not in the contract and are not
// guessed here. A create that answers 404 is AgentNotFound whatever the body (status-keyed, as
// the contract says), so a wrong base-URL path prefix also shows up as AgentNotFound there.
//
// # Errors for operators
//
// DescribeError turns any error of this package into an operator-facing sentence that names
// what to fix (a missing scope names the scope).
//
// # Where the rest lives
//
// This package is the client alone and imports no other Kimi package (a test checks it). The
// stored connection settings (base URL and keys) are app/settings' LoadWorldtree and
// SaveWorldtree; the admin's Worldtree page gathers its sections in app/admin.
//
// # Mapping to the contract's Python names
//
//	SessionApiFailed           *SessionAPIFailedError (Status, Body ≤ 1024 bytes, Code)
//	AgentNotFound              *AgentNotFoundError
//	AgentNotAvailable          *AgentNotAvailableError
//	PersonaNotConfigured       *PersonaNotConfiguredError
//	AuthScopeDenied            *AuthScopeDeniedError (Scope)
//	InvalidCursor              *InvalidCursorError (Raw)
//	BifrostConsumerKeyMissing  *BifrostConsumerKeyMissingError / ErrBifrostConsumerKeyMissing
//	BifrostHandshakeFailed     *BifrostHandshakeFailedError (BifrostError, Body)
//	AssertionError             ErrInvalidArgument (returned, never panicked; no request sent)
//	ValueError (planes)        ErrUnknownPlane
package worldtree
