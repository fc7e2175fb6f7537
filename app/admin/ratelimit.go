package admin

import (
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// ipLimiter is a token bucket per client IP for sign-in and set-up attempts.
// Buckets idle for a while are forgotten by gc, so memory stays bounded.
type ipLimiter struct {
	every time.Duration
	burst int

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

// maxBuckets caps memory under a spray of addresses. When the map is full,
// buckets that have refilled completely are dropped first (a full bucket is
// indistinguishable from a new one, so nothing is forgotten); only when every
// bucket is still in use do unknown IPs share one bucket (fail closed rather
// than grow without bound).
const maxBuckets = 10000

func newIPLimiter(every time.Duration, burst int) *ipLimiter {
	return &ipLimiter{every: every, burst: burst, buckets: map[string]*bucket{}}
}

// limiterKey is the bucket of a client address: the IPv4 address itself,
// but the whole /64 of an IPv6 address — one subscriber is routed a /64
// (or more) and could otherwise rotate through 2^64 addresses, a fresh
// budget each. IPv4-mapped IPv6 counts as its IPv4 address.
func limiterKey(ip string) string {
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

// allow takes one token for ip's bucket (see limiterKey) and reports
// whether the attempt may proceed.
func (l *ipLimiter) allow(ip string, now time.Time) bool {
	ip = limiterKey(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[ip]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.dropFull(now)
		}
		if len(l.buckets) >= maxBuckets {
			ip = "overflow"
			b = l.buckets[ip]
		}
		if b == nil {
			b = &bucket{lim: rate.NewLimiter(rate.Every(l.every), l.burst)}
			l.buckets[ip] = b
		}
	}
	b.last = now
	return b.lim.AllowN(now, 1)
}

// spendAttempt takes one token of the client's sign-in budget, which sign-in,
// set-up and password changes share; an empty bucket is a 429.
func (s *Server) spendAttempt(c echo.Context) error {
	if s.limiter.allow(c.RealIP(), time.Now()) {
		return nil
	}
	return echo.NewHTTPError(http.StatusTooManyRequests, msgRateLimited)
}

// dropFull forgets every bucket that has refilled to its burst: such a
// bucket allows exactly what a new one would. Called with l.mu held, only
// when the map is full, so its cost is amortized over many new clients.
func (l *ipLimiter) dropFull(now time.Time) {
	for ip, b := range l.buckets {
		if b.lim.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, ip)
		}
	}
}

// gc drops buckets unused for longer than idle (they would be full again).
func (l *ipLimiter) gc(now time.Time, idle time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ip, b := range l.buckets {
		if now.Sub(b.last) > idle {
			delete(l.buckets, ip)
		}
	}
}
