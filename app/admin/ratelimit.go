package admin

import (
	"container/list"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/kimiapp/kimi/app/auth"
)

// limiter is a token bucket per key (a client address, a username) for
// sign-in and set-up attempts. It holds at most maxBuckets buckets: when it
// is full, the least recently used bucket is forgotten (O(1), a list in
// use order). Forgetting gives that key a fresh budget, which is why there
// are two limiters: an attacker who sprays addresses to flush the client
// table still meets the per-username budget, and every newcomer gets its own
// full burst (a shared overflow bucket once locked out every new client).
type limiter struct {
	every time.Duration
	burst int
	max   int

	mu      sync.Mutex
	buckets map[string]*list.Element // of *bucket
	order   list.List                // front: most recently used
	pinned  map[string]*rate.Limiter // never evicted (accounts)
}

type bucket struct {
	key  string
	lim  *rate.Limiter
	last time.Time
}

// maxBuckets bounds each limiter's memory under a spray of addresses or
// usernames (about 200 bytes a bucket).
const maxBuckets = 10000

func newLimiter(every time.Duration, burst, max int) *limiter {
	return &limiter{every: every, burst: burst, max: max, buckets: map[string]*list.Element{}}
}

// allow takes one token of key's bucket and reports whether the attempt may
// proceed.
func (l *limiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b *bucket
	if e, ok := l.buckets[key]; ok {
		l.order.MoveToFront(e)
		b = e.Value.(*bucket)
	} else {
		if len(l.buckets) >= l.max {
			oldest := l.order.Back()
			l.order.Remove(oldest)
			delete(l.buckets, oldest.Value.(*bucket).key)
		}
		b = &bucket{key: key, lim: rate.NewLimiter(rate.Every(l.every), l.burst)}
		l.buckets[key] = l.order.PushFront(b)
	}
	b.last = now
	return b.lim.AllowN(now, 1)
}

// gc drops buckets unused for longer than idle (they would be full again),
// walking from the least recently used end.
func (l *limiter) gc(now time.Time, idle time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for e := l.order.Back(); e != nil; e = l.order.Back() {
		b := e.Value.(*bucket)
		if now.Sub(b.last) <= idle {
			return
		}
		l.order.Remove(e)
		delete(l.buckets, b.key)
	}
}

// allowPinned is allow for a key the table never evicts (an account: there
// are few, and forgetting one would refill a guessed account's budget).
func (l *limiter) allowPinned(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pinned == nil {
		l.pinned = map[string]*rate.Limiter{}
	}
	b, ok := l.pinned[key]
	if !ok {
		b = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.pinned[key] = b
	}
	return b.AllowN(now, 1)
}

func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// clientKey is the bucket of a client address: the IPv4 address itself,
// but the whole /64 of an IPv6 address — one subscriber is routed a /64
// (or more) and could otherwise rotate through 2^64 addresses, a fresh
// budget each. IPv4-mapped IPv6 counts as its IPv4 address.
func clientKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String()
	}
	return netip.PrefixFrom(addr.WithZone(""), 64).Masked().String()
}

// spendAttempt takes one token of the client's sign-in budget, which sign-in,
// set-up and password changes share, and, when username names a real
// account, one of that account's budget, shared by every address; either
// empty is a 429. The account budget is what a distributed guesser (many
// addresses, each within its own budget) runs into. It is kept for real
// accounts only, in buckets the bounded table never evicts (there are few
// accounts), so a spray of invented names cannot flush a spent budget; and a
// browser with a device cookie for the account (it signed in before) skips
// it, so guessers elsewhere cannot lock the admin out.
func (s *Server) spendAttempt(c echo.Context, username string) error {
	now := time.Now()
	if !s.limiter.allow(clientKey(c.RealIP()), now) {
		return echo.NewHTTPError(http.StatusTooManyRequests, msgRateLimited)
	}
	if username == "" {
		return nil
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	account, known, err := s.opts.Auth.AccountName(ctx, username)
	if err != nil {
		return fmt.Errorf("admin: sign-in budget: %w", err)
	}
	if !known || s.trustedDevice(c, account) {
		return nil
	}
	if !s.userLimiter.allowPinned(strings.ToLower(account), now) {
		return echo.NewHTTPError(http.StatusTooManyRequests, msgRateLimitedUser)
	}
	return nil
}

// msgRateLimitedUser answers an attempt refused by the username budget.
const msgRateLimitedUser = "Too many sign-in attempts for this username. Wait a minute, then try again."

// busyRetryAfter is the Retry-After of a 503 for a full password-hashing
// queue: the queue drains in well under a second.
const busyRetryAfter = "2"

// mapBusy turns auth.ErrBusy (the password-hashing queue is full) from any
// handler into a 503 with Retry-After, instead of a logged 500. The answer
// is by design: it is summarized at WARN (overloadAnswered), never an ERROR.
func (s *Server) mapBusy(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err != nil && errors.Is(err, auth.ErrBusy) {
			c.Set(ctxOverload, true)
			s.overloadAnswered()
			c.Response().Header().Set("Retry-After", busyRetryAfter)
			return echo.NewHTTPError(http.StatusServiceUnavailable, msgUnavailable)
		}
		return err
	}
}
