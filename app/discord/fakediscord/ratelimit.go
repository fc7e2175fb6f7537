package fakediscord

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"
	"time"
)

type routeLimit struct {
	limit  int
	window time.Duration
}

type bucket struct {
	hash  string
	limit int
	count int
	reset time.Time
}

type globalWindow struct {
	start time.Time
	count int
}

// SetRateLimit sets one route's bucket ("POST /channels/{channel}/messages"): limit requests per
// window, counted per major parameter (channel, guild, webhook) as Discord counts them.
func (s *Server) SetRateLimit(route string, limit int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[route] = routeLimit{limit: limit, window: window}
	for k := range s.buckets {
		delete(s.buckets, k)
	}
}

// BucketHash is the X-RateLimit-Bucket value of a route.
func BucketHash(route string) string {
	sum := sha1.Sum([]byte(route))
	return hex.EncodeToString(sum[:8])
}

// majorKey is the route's major parameter value (channel, guild, webhook/interaction).
func (c *call) majorKey() string {
	for _, p := range []string{"channel", "guild", "app", "interaction"} {
		if v := c.param(p); v != "" {
			if p == "app" {
				return v + "/" + c.param("token")
			}
			return v
		}
	}
	return ""
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(math.Max(d.Seconds(), 0), 'f', 3, 64)
}

// rateLimit counts the request in its bucket and the global window and answers 429 past either
// limit; every answer carries the bucket's X-RateLimit-* headers. s.mu is held.
func (s *Server) rateLimit(w http.ResponseWriter, c *call) *apiError {
	now := s.now()
	if s.opts.GlobalLimit > 0 && c.param("interaction") == "" {
		if now.Sub(s.gwin.start) >= time.Second {
			s.gwin = globalWindow{start: now}
		}
		s.gwin.count++
		if s.gwin.count > s.opts.GlobalLimit {
			after := s.gwin.start.Add(time.Second).Sub(now)
			h := w.Header()
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
			h.Set("Retry-After", strconv.Itoa(int(math.Ceil(after.Seconds()))))
			return rateLimited(after, true)
		}
	}
	lim, ok := s.limits[c.route]
	if !ok {
		lim = routeLimit{limit: s.opts.RouteLimit, window: s.opts.RouteWindow}
	}
	key := c.route + "|" + c.majorKey()
	b := s.buckets[key]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{hash: BucketHash(c.route), limit: lim.limit, reset: now.Add(lim.window)}
		s.buckets[key] = b
	}
	b.count++
	after := b.reset.Sub(now)
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(b.limit-b.count, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(b.reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", seconds(after))
	h.Set("X-RateLimit-Bucket", b.hash)
	if b.count > b.limit {
		h.Set("X-RateLimit-Scope", "user")
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(after.Seconds()))))
		return rateLimited(after, false)
	}
	return nil
}

func rateLimited(after time.Duration, global bool) *apiError {
	return &apiError{status: http.StatusTooManyRequests, Message: "You are being rate limited.",
		Errors: nil, Code: 0, retry: &retryBody{RetryAfter: math.Max(after.Seconds(), 0), Global: global}}
}

type retryBody struct {
	RetryAfter float64 `json:"retry_after"`
	Global     bool    `json:"global"`
}

// Fault is a one-off failure injected into a route.
type Fault struct {
	// Route is the route to fail ("POST /channels/{channel}/messages"); "" fails any route.
	Route string
	// Status is the status to answer: 429 (with a rate-limit body), a 5xx, or a 4xx with
	// Code (403 CodeMissingPermissions, 404 CodeUnknownChannel / CodeUnknownMessage, …).
	Status int
	// Code and Message are a 4xx's JSON error body (Discord's code; Message defaults to
	// Discord's text for the codes the fake knows, else the status text).
	Code    int
	Message string
	// RetryAfter and Global shape a 429 body. RetryAfter defaults to 1 ms.
	RetryAfter time.Duration
	Global     bool
	// AfterHandling runs the request first (the message is created, the events dispatched) and
	// answers Status afterwards: the "uncertain send" Discord sometimes gives.
	AfterHandling bool
	// Times is how many requests fail (default 1).
	Times int
	// Skip is how many matching requests pass unharmed before the fault
	// applies (a test fails the second chunk of a run, not the first).
	Skip int
}

// InjectFault makes the next f.Times requests of f.Route fail with f.Status.
func (s *Server) InjectFault(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	if f.Status == http.StatusTooManyRequests && f.RetryAfter <= 0 {
		f.RetryAfter = time.Millisecond
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// takeFault consumes the first fault matching route. s.mu is held.
func (s *Server) takeFault(route string) *Fault {
	for i, f := range s.faults {
		if f.Route != "" && f.Route != route {
			continue
		}
		if f.Skip > 0 {
			f.Skip--
			continue
		}
		f.Times--
		if f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

func (f *Fault) answer(w http.ResponseWriter) (int, any, *apiError) {
	if f.Status == http.StatusTooManyRequests {
		h := w.Header()
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
		if f.Global {
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
		} else {
			h.Set("X-RateLimit-Scope", "user")
		}
		e := rateLimited(f.RetryAfter, f.Global)
		return e.status, nil, e
	}
	msg := f.Message
	if msg == "" {
		msg = faultMessages[f.Code]
	}
	if msg == "" {
		msg = strconv.Itoa(f.Status) + ": " + http.StatusText(f.Status)
	}
	e := &apiError{status: f.Status, Code: f.Code, Message: msg}
	return e.status, nil, e
}

// faultMessages are Discord's texts for the codes a Fault may carry.
var faultMessages = map[int]string{
	CodeUnknownChannel:     "Unknown Channel",
	CodeUnknownGuild:       "Unknown Guild",
	CodeUnknownMember:      "Unknown Member",
	CodeUnknownMessage:     "Unknown Message",
	CodeUnknownUser:        "Unknown User",
	CodeMissingAccess:      "Missing Access",
	CodeMissingPermissions: "Missing Permissions",
}
