package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// User-facing messages of refused requests.
const (
	msgFormTooLarge = "The form is far larger than a task may hold (its content at most 60,000 characters, at most 10 attachments): shorten it and try again."
	msgCSRF         = "This form has expired or did not come from this site. Go back, reload the page and try again."
	msgCrossOrigin  = "This request came from another site and was refused to protect your account."
	msgSignIn       = "Please sign in first."
	msgRateLimited  = "Too many attempts from your address. Wait a minute, then try again."
	msgNotFound     = "There is nothing at this address. Check the link or use the navigation."
	msgServerError  = "Something went wrong on our side. The error was logged; quote the request ID below when reporting it."
	msgTooLarge     = "The request was too large."
	msgBadRequest   = "The request could not be understood."
	msgUnavailable  = "The service is temporarily unavailable. Try again shortly."
	msgNotAllowed   = "That action is not available at this address."
	msgBackupFailed = "The backup could not be created. The error was logged."
	// msgDiskFull takes the data directory.
	msgDiskFull = "Kimi's disk is full: nothing was saved. Free space in %s and try again."
	// msgBusy takes the database file's name.
	msgBusy = "The database is busy (another program holds a lock on %s); nothing was saved."
)

// lockRetryAfter is the Retry-After (seconds) of a write refused on a lock.
const lockRetryAfter = "10"

// writeRefusal maps a write the store refused, for lack of space or on
// another program's lock, to 503 and the sentence that says so; ok is false
// for any other error. Handlers that re-render a form use it to keep the
// form's values; handleError uses it for every other route.
func (s *Server) writeRefusal(err error) (status int, message string, ok bool) {
	switch {
	case errors.Is(err, store.ErrDiskFull):
		return http.StatusServiceUnavailable, fmt.Sprintf(msgDiskFull, s.opts.Store.DataDir()), true
	case errors.Is(err, store.ErrBusy):
		return http.StatusServiceUnavailable, fmt.Sprintf(msgBusy, filepath.Base(s.opts.Store.Path())), true
	}
	return 0, "", false
}

// refusedForm is the form-level message of a write the store refused (a
// full disk, another program's lock) and its status, for a handler that
// re-renders its form with what was typed; ok is false for other errors.
func (s *Server) refusedForm(c echo.Context, err error) (errs form.Errors, status int, ok bool) {
	status, msg, ok := s.writeRefusal(err)
	if !ok {
		return nil, 0, false
	}
	s.refuseWrite(c, err)
	return form.Errors{form.FieldForm: msg}, status, true
}

// writeFailure is the banner sentence while the store's last writes failed
// for lack of space or on a lock, "" while writes succeed. The free space is
// read now (one statfs), never polled.
func (s *Server) writeFailure(now time.Time) string {
	h := s.opts.Store.WriteHealth()
	dir := s.opts.Store.DataDir()
	switch {
	case !h.DiskFullSince.IsZero():
		free := "free space unknown"
		if n, err := store.FreeBytes(dir); err == nil {
			free = humanBytes(n) + " free"
		}
		return fmt.Sprintf("Kimi's disk is full: writes have failed since %s (%s). %s in %s; free space there and try again.",
			h.DiskFullSince.UTC().Format("2006-01-02 15:04:05 UTC"), relativeTime(h.DiskFullSince, now), free, dir)
	case !h.BusySince.IsZero():
		return fmt.Sprintf("The database is busy: another program has held a lock on %s since %s (%s). Close it, then try again.",
			filepath.Base(s.opts.Store.Path()), h.BusySince.UTC().Format("2006-01-02 15:04:05 UTC"), relativeTime(h.BusySince, now))
	}
	return ""
}

// refuseWrite answers a refused write's headers (Retry-After on a lock) and
// logs it at most once a minute per cause: the store has logged the cause.
func (s *Server) refuseWrite(c echo.Context, err error) {
	cause := "disk_full"
	if errors.Is(err, store.ErrBusy) {
		cause = "busy"
		c.Response().Header().Set("Retry-After", lockRetryAfter)
	}
	s.writeLog.Log(c.Request().Context(), s.log, slog.LevelWarn, cause, "request refused: nothing was saved",
		"err", err, "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", requestIDOf(c))
}

// Flash codes carried across a redirect in a short-lived cookie. Only codes
// travel, never text, so a cookie cannot inject content.
const (
	flashSessionExpired      = "expired"
	flashSignedOut           = "signedout"
	flashSignedOutKept       = "signedoutkept"
	flashWelcome             = "welcome"
	flashSignedIn            = "signedin"
	flashPasswordChanged     = "pwchanged"
	flashSessionsRevoked     = "revoked"
	flashWorldtreeOff        = "wtremoved"
	flashGuildCreated        = "guildnew"
	flashGuildExists         = "guildold"
	flashGuildSaved          = "guildsaved"
	flashGuildUnchanged      = "guildsame"
	flashGuildReverted       = "guildrevert"
	flashModuleEnabled       = "modon"
	flashModuleDisabled      = "modoff"
	flashModuleWaits         = "modwait"
	flashModuleRestarted     = "modrestart"
	flashModuleSaved         = "modsaved"
	flashJobRun              = "jobrun"
	flashJobCancelled        = "jobcancel"
	flashProposalNotifySaved = "propnotify"
)

var flashes = map[string]templates.Flash{
	flashSessionExpired: {Kind: templates.FlashInfo, Message: "Your session expired. Please sign in again."},
	flashSignedOut:      {Kind: templates.FlashSuccess, Message: "You have been signed out."},
	flashSignedOutKept: {Kind: templates.FlashWarning, Message: "You are signed out in this browser, but Kimi could not end the session on the server " +
		"(its disk is full or another program holds a lock on its database): the session ends by itself when it expires. " +
		"Once saving works again, sign in and use Sign out other sessions in Settings to end it now."},
	flashWelcome:             {Kind: templates.FlashSuccess, Message: "Welcome! Your admin account is ready and you are signed in."},
	flashSignedIn:            {Kind: templates.FlashSuccess, Message: "Signed in."},
	flashPasswordChanged:     {Kind: templates.FlashSuccess, Message: "Password changed. All other sessions were signed out."},
	flashSessionsRevoked:     {Kind: templates.FlashSuccess, Message: "All other sessions were signed out."},
	flashWorldtreeOff:        {Kind: templates.FlashSuccess, Message: "The Worldtree configuration was removed, keys included."},
	flashGuildCreated:        {Kind: templates.FlashSuccess, Message: "Guild added. It stays inactive until you switch the bot on below and save."},
	flashGuildExists:         {Kind: templates.FlashInfo, Message: "This guild already has a server-setup document; here it is."},
	flashGuildSaved:          {Kind: templates.FlashSuccess, Message: "Saved as a new revision. The bot uses it from now on; the history shows the change."},
	flashGuildUnchanged:      {Kind: templates.FlashInfo, Message: "Nothing changed: the document already had this text, so no revision was recorded."},
	flashGuildReverted:       {Kind: templates.FlashSuccess, Message: "Reverted: the old text is now the newest revision, recorded in the history like any save."},
	flashModuleEnabled:       {Kind: templates.FlashSuccess, Message: "Module enabled; the modules were restarted on the new selection."},
	flashModuleDisabled:      {Kind: templates.FlashSuccess, Message: "Module disabled; the modules were restarted on the new selection."},
	flashModuleWaits:         {Kind: templates.FlashInfo, Message: "Saved, but KIMI_MODULES sets the selection: the change applies once it is removed from the environment."},
	flashModuleRestarted:     {Kind: templates.FlashSuccess, Message: "Restarted. The list shows each module's state now."},
	flashJobRun:              {Kind: templates.FlashSuccess, Message: "The job is due now: the scheduler runs it as soon as the module's slot is free."},
	flashJobCancelled:        {Kind: templates.FlashSuccess, Message: "The job is cancelled: it will not run again unless the module schedules it anew."},
	flashModuleSaved:         {Kind: templates.FlashSuccess, Message: "Settings saved. The module uses them from its next restart."},
	flashProposalNotifySaved: {Kind: templates.FlashSuccess, Message: "Proposal notifications saved. They apply to the next proposal."},
}

func (s *Server) setFlash(c echo.Context, code string) {
	s.setCookie(c, flashCookie, code, time.Minute, http.SameSiteLaxMode)
}

// takeFlash reads and clears the pending flash.
func (s *Server) takeFlash(c echo.Context) []templates.Flash {
	ck, err := c.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	s.clearCookie(c, flashCookie)
	code, near, _ := strings.Cut(ck.Value, "@")
	if f, ok := flashes[code]; ok {
		if flashNearRE.MatchString(near) {
			f.Near = near
		}
		return []templates.Flash{f}
	}
	return nil
}

// chrome builds the layout data of a page.
func (s *Server) chrome(c echo.Context, title, active string) templates.Chrome {
	ch := templates.Chrome{
		Title:   title,
		Active:  active,
		CSRF:    s.csrfToken(c),
		Assets:  s.pageAssets,
		Version: s.opts.Version,
		Flashes: s.takeFlash(c),
	}
	ch.Demo = s.opts.Demo != nil
	if sess := sessionOf(c); sess != nil {
		ch.User = sess.Username
		ch.WriteFailure = s.writeFailure(time.Now())
		if s.worldtreeConfigured(c.Request().Context()) {
			ch.ShowOptional = []string{"worldtree"}
		}
		if ch.Demo {
			ch.ShowOptional = append(ch.ShowOptional, "demo")
		}
		ch.Pending = s.pendingProposals(c.Request().Context())
		if f, ok := s.decisions.take(sess.ID, c.Request().URL.Path, time.Now()); ok {
			ch.Flashes = append(ch.Flashes, f)
		}
	}
	return ch
}

// render writes a component into a pooled buffer first, so a template error
// still becomes a clean error page rather than half a 200.
func render(c echo.Context, status int, cmp templ.Component) error {
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	if err := cmp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	// A known length spares net/http the chunked encoding of pages > 2 KiB.
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	return c.HTMLBlob(status, buf.Bytes())
}

// handleError is echo's error handler: it logs server errors with the
// request ID and renders a friendly page; raw errors never reach the client.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status := http.StatusInternalServerError
	message := ""
	var he *echo.HTTPError
	refusedStatus, refused, isRefused := s.writeRefusal(err)
	switch {
	case isRefused:
		status = refusedStatus
		s.refuseWrite(c, err)
	case errors.As(err, &he):
		status = he.Code
		if m, ok := he.Message.(string); ok && he.Internal == nil {
			message = m
		}
	}
	if status >= 500 && !overloaded(c) && !isRefused {
		s.log.Error("request failed", "err", err, "method", c.Request().Method,
			"path", c.Request().URL.Path, "request_id", requestIDOf(c))
	}
	// Unknown addresses look the same as protected ones to a stranger.
	if status == http.StatusNotFound && sessionOf(c) == nil && c.Request().Method == http.MethodGet &&
		!isPublicPrefix(c.Request().URL.Path) {
		if rerr := s.toLogin(c); rerr == nil {
			return
		}
	}
	title, fallback := statusText(status)
	if message == "" || status >= 500 || message == http.StatusText(status) {
		message = fallback
	}
	if isRefused {
		title, message = "Nothing was saved", refused
	}
	if status == http.StatusTooManyRequests {
		c.Response().Header().Set("Retry-After", "60")
	}
	if status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="kimi"`)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	view := templates.ErrorView{
		Status: status, Title: title, Message: message, RequestID: requestIDOf(c), SignedIn: sessionOf(c) != nil,
	}
	if rerr := render(c, status, templates.ErrorPage(s.chrome(c, title, ""), view)); rerr != nil {
		s.log.Error("render error page", "err", rerr, "request_id", requestIDOf(c))
		_ = c.String(status, title)
	}
}

func isPublicPrefix(path string) bool {
	return strings.HasPrefix(path, "/static/")
}

func statusText(status int) (title, message string) {
	switch status {
	case http.StatusBadRequest:
		return "Bad request", msgBadRequest
	case http.StatusUnauthorized:
		return "Sign-in required", msgSignIn
	case http.StatusForbidden:
		return "Request refused", msgCSRF
	case http.StatusNotFound:
		return "Page not found", msgNotFound
	case http.StatusMethodNotAllowed:
		return "Not allowed", msgNotAllowed
	case http.StatusRequestEntityTooLarge:
		return "Too large", msgTooLarge
	case http.StatusTooManyRequests:
		return "Slow down", msgRateLimited
	case http.StatusServiceUnavailable:
		return "Unavailable", msgUnavailable
	}
	if status >= 500 {
		return "Something went wrong", msgServerError
	}
	return http.StatusText(status), http.StatusText(status)
}
