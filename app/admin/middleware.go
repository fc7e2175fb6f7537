package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/auth"
)

// Cookie names.
const (
	sessionCookie = "kimi_session"
	csrfCookie    = "kimi_csrf" // pre-session CSRF token for the sign-in and set-up forms
	flashCookie   = "kimi_flash"
)

const (
	ctxSession   = "kimi.session"
	ctxRequestID = "kimi.request_id"
	csrfField    = "_csrf"
	csrfHeader   = "X-CSRF-Token"
)

var requestIDRE = regexp.MustCompile(`\A[A-Za-z0-9._-]{1,64}\z`)

// csrfTokenRE is the one shape of every CSRF token Kimi issues, the
// pre-session cookie's and the session's alike: crypto/rand.Text, 26
// characters of the base32 alphabet (128 bits). Anything else is refused,
// so a one-character cookie cannot make a one-character token valid.
var csrfTokenRE = regexp.MustCompile(`\A[A-Z2-7]{26}\z`)

func validCSRFToken(t string) bool { return csrfTokenRE.MatchString(t) }

// msgMisdirected is the plain answer to a request for a host this server
// does not serve.
const msgMisdirected = "This server does not answer to that host name. Open Kimi at the address it was configured with (KIMI_BASE_URL).\n"

// checkHost refuses a Host header that is not one of AllowedHosts with a
// plain 421, before routing, session lookup or any handler: a DNS-rebinding
// page (evil.example resolving to this server) runs in the victim's browser
// with evil.example as its origin, so origin checks pass, but its Host
// header still names evil.example. /healthz and /readyz are exempt:
// container health checks send whatever Host they like, and a probe
// reveals nothing. So is GET /metrics with the metrics bearer token: a
// scraper on a container network names Kimi by its service name, and a
// rebinding page cannot add a token it does not know.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.hosts == nil || s.allowedHost(r.Host) || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" ||
			r.URL.Path == "/metrics" && r.Method == http.MethodGet && s.metricsTokenOK(r.Header.Get(echo.HeaderAuthorization)) {
			return next(c)
		}
		s.log.Debug("request for a host this server does not serve", "host", truncateHost(r.Host),
			"path", r.URL.Path, "request_id", requestIDOf(c))
		return c.String(http.StatusMisdirectedRequest, msgMisdirected)
	}
}

// allowedHost reports whether host is an allowed Host header value; one
// allowed without a port also matches with the default ports.
func (s *Server) allowedHost(host string) bool {
	host = strings.ToLower(host)
	if s.hosts[host] {
		return true
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil || (port != "80" && port != "443") {
		return false
	}
	if strings.Contains(name, ":") {
		name = "[" + name + "]"
	}
	return s.hosts[name]
}

func truncateHost(h string) string {
	if len(h) > 100 {
		return h[:100] + "…"
	}
	return h
}

// requestID adopts a well-formed incoming X-Request-Id or makes one, and
// echoes it in the response, so logs and error pages can be correlated.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !requestIDRE.MatchString(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

func requestIDOf(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// accessLog is echo's RequestLogger feeding slog and the HTTP metrics. It
// hands errors to the error handler first (HandleError), so the logged
// status is the one sent. Only the path is logged — never the query (it may
// carry the setup token), cookies or Authorization.
func (s *Server) accessLog() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:     true,
		LogLatency:      true,
		LogMethod:       true,
		LogURIPath:      true,
		LogRoutePath:    true,
		LogStatus:       true,
		LogResponseSize: true,
		LogRemoteIP:     true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			route := v.RoutePath
			if route == "" || route == "/*" && v.Status == http.StatusNotFound {
				route = "unmatched"
			}
			s.metrics.observe(route, v.Method, v.Status, v.Latency)
			level := slog.LevelInfo
			switch {
			case v.Status >= 500 && !overloaded(c): // overload is summarized by overloadAnswered
				level = slog.LevelError
			case route == "/healthz" || route == "/readyz" || route == "/static/*" || route == "/metrics":
				level = slog.LevelDebug
			}
			s.log.LogAttrs(c.Request().Context(), level, "http request",
				slog.String("method", v.Method),
				slog.String("path", v.URIPath),
				slog.String("route", route),
				slog.Int("status", v.Status),
				slog.Float64("ms", float64(v.Latency.Microseconds())/1000),
				slog.Int64("bytes", v.ResponseSize),
				slog.String("ip", v.RemoteIP),
				slog.String("request_id", requestIDOf(c)),
			)
			return nil
		},
	})
}

// recoverPanic turns a handler panic into a logged 500.
func (s *Server) recoverPanic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("admin: panic: %v\n%s", r, debug.Stack())
			}
		}()
		return next(c)
	}
}

// securityHeaders sets the hardening headers and a strict CSP on every
// response. Pages are never cached (they show session-specific data); the
// static handler overrides Cache-Control for hashed assets. The values are
// built once in New and shared: assigning a one-element slice is safe
// because Header.Add appends into a new array and Set replaces the slice.
func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		for _, kv := range s.headers {
			h[kv.key] = kv.value
		}
		return next(c)
	}
}

// contentSecurityPolicy allows only this origin's own files: no inline
// script or style, no framing, forms post back here only.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https://cdn.discordapp.com; font-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

type headerValue struct {
	key   string
	value []string
}

func (s *Server) buildSecurityHeaders() []headerValue {
	hv := []headerValue{
		{"Content-Security-Policy", []string{contentSecurityPolicy}},
		{"X-Content-Type-Options", []string{"nosniff"}},
		{"X-Frame-Options", []string{"DENY"}},
		{"Referrer-Policy", []string{"same-origin"}},
		{"Permissions-Policy", []string{"camera=(), microphone=(), geolocation=(), payment=(), usb=()"}},
		{"Cross-Origin-Opener-Policy", []string{"same-origin"}},
		{"Cross-Origin-Resource-Policy", []string{"same-origin"}},
		{"X-Robots-Tag", []string{"noindex, nofollow"}}, // an admin UI never belongs in a search index
		{"Cache-Control", []string{"no-store"}},
	}
	if s.secure {
		hv = append(hv, headerValue{"Strict-Transport-Security", []string{"max-age=31536000"}})
	}
	for i := range hv {
		hv[i].key = http.CanonicalHeaderKey(hv[i].key)
	}
	return hv
}

// Request body limits: maxBody for every request, except the routes that
// carry a whole configuration document (guildcfg.MaxDocumentBytes of text,
// which a url-encoded form posts as up to three times as many bytes: %E8%A6%AA
// for one byte of a Japanese character), which get maxDocumentBody — so the
// document limit answers with its own field error, never a 413 page that
// loses the typed text.
const (
	maxBody         = 1 << 20
	maxDocumentBody = 4 << 20
)

// largeBodyRoutes are the routes (echo route paths) allowed maxDocumentBody.
var largeBodyRoutes = map[string]bool{"/guilds/:id/document": true}

// maxUploadBody bounds a task form with its attachments (25 MiB of files,
// tasks.MaxOutputFileBytes, and the form's text and multipart framing).
const maxUploadBody = 27 << 20

// uploadBodyRoutes are the routes allowed maxUploadBody (the task forms).
var uploadBodyRoutes = map[string]bool{"/tasks": true, "/tasks/:id/edit": true}

func (s *Server) bodyLimit(n int64) echo.MiddlewareFunc {
	return middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: fmt.Sprintf("%dB", n)})
}

// bodyLimits bounds every request body before anything reads it (the CSRF
// check parses the form): maxBody, or maxDocumentBody on largeBodyRoutes.
func (s *Server) bodyLimits() echo.MiddlewareFunc {
	small, large, upload := s.bodyLimit(maxBody), s.bodyLimit(maxDocumentBody), s.bodyLimit(maxUploadBody)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		toSmall, toLarge, toUpload := small(next), large(next), upload(next)
		return func(c echo.Context) error {
			if largeBodyRoutes[c.Path()] {
				return toLarge(c)
			}
			if uploadBodyRoutes[c.Path()] {
				return toUpload(c)
			}
			return toSmall(c)
		}
	}
}

// crossOrigin rejects cross-site state changes (Go's CrossOriginProtection:
// Sec-Fetch-Site, else Origin vs Host; the BaseURL origin is trusted).
func (s *Server) crossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.origin.Check(c.Request()); err != nil {
			s.log.Warn("cross-origin request refused", "path", c.Request().URL.Path,
				"origin", c.Request().Header.Get("Origin"), "sec_fetch_site", c.Request().Header.Get("Sec-Fetch-Site"),
				"request_id", requestIDOf(c))
			return echo.NewHTTPError(http.StatusForbidden, msgCrossOrigin)
		}
		return next(c)
	}
}

// loadSession resolves the session cookie, if any. Invalid or expired
// cookies are cleared; the request continues signed out.
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := c.Request().URL.Path
		if p == "/healthz" || p == "/readyz" || strings.HasPrefix(p, "/static/") {
			return next(c)
		}
		ck, err := c.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			return next(c)
		}
		sess, err := s.opts.Auth.Authenticate(c.Request().Context(), ck.Value)
		switch {
		case err == nil:
			c.Set(ctxSession, &sess)
		case errors.Is(err, auth.ErrSessionInvalid), errors.Is(err, auth.ErrSessionExpired):
			s.clearCookie(c, sessionCookie)
			if errors.Is(err, auth.ErrSessionExpired) && c.Request().Method == http.MethodGet {
				s.setFlash(c, flashSessionExpired)
			}
		default:
			return fmt.Errorf("admin: load session: %w", err)
		}
		return next(c)
	}
}

func sessionOf(c echo.Context) *auth.Session {
	sess, _ := c.Get(ctxSession).(*auth.Session)
	return sess
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCSRF requires the _csrf field of the form body (or the X-CSRF-Token
// header) on every state-changing request: the session's token when signed
// in, else the pre-session cookie's token (double submit), so sign-in and
// set-up are covered too. The query string is never read (a token in a URL
// leaks into logs and Referer), and both tokens must have the shape Kimi
// issues (validCSRFToken). Compared in constant time; a mismatch is a 403
// before any handler runs.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if safeMethod(c.Request().Method) {
			return next(c)
		}
		r := c.Request()
		defer s.removeSpooled(c, r)
		sess := sessionOf(c)
		got := r.Header.Get(csrfHeader)
		multi := strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/")
		if sess == nil && !s.publicPath[r.Method+" "+c.Path()] && (multi || uploadBodyRoutes[c.Path()] || largeBodyRoutes[c.Path()]) {
			// Only signed-in pages post files and the large bodies (up to
			// maxUploadBody): a signed-out one is left unread for
			// requireAdmin to refuse, whatever token it carries.
			return next(c)
		}
		if got == "" && multi && sess != nil {
			// A signed-in multipart form is parsed with the task form's
			// in-memory share, the rest spooled to temporary files
			// (removeSpooled deletes them once the handler is done).
			if err := r.ParseMultipartForm(form.MaxUploadMemory); err != nil {
				s.log.Warn("multipart form not read", "path", r.URL.Path, "err", err, "request_id", requestIDOf(c))
				if he := (*echo.HTTPError)(nil); errors.As(err, &he) {
					return he // the body limit's 413
				}
				if errors.Is(err, multipart.ErrMessageTooLarge) {
					return echo.NewHTTPError(http.StatusRequestEntityTooLarge, msgFormTooLarge)
				}
				return echo.NewHTTPError(http.StatusBadRequest, form.MsgTaskUpload)
			}
		}
		if got == "" {
			got = r.PostFormValue(csrfField)
		}
		var want string
		if sess != nil {
			want = sess.CSRFToken
		} else if ck, err := c.Cookie(csrfCookie); err == nil {
			want = ck.Value
		}
		if !validCSRFToken(want) || !validCSRFToken(got) || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			s.log.Warn("CSRF token missing or wrong", "path", c.Request().URL.Path,
				"ip", c.RealIP(), "request_id", requestIDOf(c))
			return echo.NewHTTPError(http.StatusForbidden, msgCSRF)
		}
		return next(c)
	}
}

// removeSpooled deletes the temporary files a multipart form was spooled to
// as soon as the handler is done, before the response is sent. net/http
// removes them too, but only after it has flushed the response, so a client
// (or the next request) could still find them on disk. Both the request the
// middleware saw and the one the handler left (WithContext copies share the
// form) are checked.
func (s *Server) removeSpooled(c echo.Context, r *http.Request) {
	for _, req := range []*http.Request{r, c.Request()} {
		if req.MultipartForm == nil {
			continue
		}
		if err := req.MultipartForm.RemoveAll(); err != nil {
			s.log.Warn("temporary upload files not removed", "path", req.URL.Path, "err", err, "request_id", requestIDOf(c))
		}
	}
}

// requireAdmin guards every non-public route: page requests are redirected
// to the sign-in page (coming back afterwards), anything else gets 401.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if sessionOf(c) != nil {
			return next(c)
		}
		return s.toLogin(c)
	}
}

func (s *Server) toLogin(c echo.Context) error {
	req := c.Request()
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		target := "/login"
		if uri := req.URL.RequestURI(); uri != "/" && uri != "" {
			target += "?next=" + url.QueryEscape(localRedirect(uri))
		}
		return c.Redirect(http.StatusSeeOther, target)
	}
	return echo.NewHTTPError(http.StatusUnauthorized, msgSignIn)
}

// cookieSecure reports whether cookies must carry the Secure attribute.
func (s *Server) cookieSecure(c echo.Context) bool {
	if s.secure || c.Request().TLS != nil {
		return true
	}
	return s.proxies.fromTrustedProxy(c.Request()) &&
		strings.EqualFold(strings.TrimSpace(c.Request().Header.Get(echo.HeaderXForwardedProto)), "https")
}

func (s *Server) setCookie(c echo.Context, name, value string, maxAge time.Duration, sameSite http.SameSite) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.cookieSecure(c),
		SameSite: sameSite, MaxAge: int(maxAge / time.Second),
	})
}

func (s *Server) clearCookie(c echo.Context, name string) {
	s.setCookie(c, name, "", -time.Second, http.SameSiteLaxMode) // MaxAge -1: delete now
}

func (s *Server) setSessionCookie(c echo.Context, issued auth.IssuedSession) {
	s.setCookie(c, sessionCookie, issued.Cookie, s.opts.Auth.Options().SessionAbsolute, http.SameSiteLaxMode)
}

// preSessionToken returns the pre-session CSRF token, issuing the cookie on
// first use and replacing one that is not of the shape Kimi issues.
func (s *Server) preSessionToken(c echo.Context) string {
	if ck, err := c.Cookie(csrfCookie); err == nil && validCSRFToken(ck.Value) {
		return ck.Value
	}
	tok := rand.Text()
	s.setCookie(c, csrfCookie, tok, 12*time.Hour, http.SameSiteStrictMode)
	return tok
}

// csrfToken is the token forms on this page must carry.
func (s *Server) csrfToken(c echo.Context) string {
	if sess := sessionOf(c); sess != nil {
		return sess.CSRFToken
	}
	return s.preSessionToken(c)
}

// withTimeout bounds the store work of one request.
func withTimeout(c echo.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), d)
}
