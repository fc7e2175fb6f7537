package discord

import (
	"net/http"
	"time"
)

// STUB: the actions work replaces this file (Kimi's ctx-aware rate limiter).

// RateLimitEvent is one rate limit Kimi met (a 429, or a wait for an
// exhausted bucket).
type RateLimitEvent struct {
	Route      string // "POST /channels/{channel}/messages"
	Bucket     string // X-RateLimit-Bucket, "" when unknown
	RetryAfter time.Duration
	Global     bool
	At         time.Time
}

// newTransport wraps base with Kimi's rate limiting; onLimit (may be nil)
// hears every limit met.
func newTransport(base http.RoundTripper, onLimit func(RateLimitEvent)) http.RoundTripper {
	return base
}
