package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/worldtree"
	"github.com/kimiapp/kimi/web/templates"
)

// worldtreeTestTimeout bounds the connection test a save runs (one GET /me), so saving an
// unreachable address answers in seconds.
const worldtreeTestTimeout = 5 * time.Second

// worldtreeFormKey carries the submitted Worldtree form (with its errors) from the save handler
// into renderSettings, so a refused save re-renders the whole settings page with the input kept.
const worldtreeFormKey = "admin.worldtree_form"

// worldtreeSettingsView is the Worldtree section of the settings page: the form kept by a refused
// save, or the stored settings (keys only as set / not set) with a pending save result.
func (s *Server) worldtreeSettingsView(ctx context.Context, c echo.Context) (templates.WorldtreeSettingsView, error) {
	if v, ok := c.Get(worldtreeFormKey).(templates.WorldtreeSettingsView); ok {
		return v, nil
	}
	st, err := settings.LoadWorldtree(ctx, s.opts.Store)
	if err != nil {
		return templates.WorldtreeSettingsView{}, err
	}
	v := storedWorldtreeView(st)
	if sess := sessionOf(c); sess != nil {
		if f, ok := s.worldtree.takeResult(sess.ID, "/settings", time.Now()); ok {
			v.Result = &f
		}
	}
	return v, nil
}

func storedWorldtreeView(st settings.Worldtree) templates.WorldtreeSettingsView {
	return templates.WorldtreeSettingsView{
		Configured: st.Configured(), BaseURL: st.BaseURL, DefaultKeySet: st.DefaultKey != "",
		AdminKeySet: st.AdminKey != "", ConsumerKeySet: st.ConsumerKey != "", Errors: map[string]string{},
	}
}

// saveWorldtreeSettings stores the Worldtree settings form (blank keys keep the stored ones, the
// clear boxes remove them), then tests the connection once and shows one result: on the
// Worldtree page when Worldtree answered, beside the form when it did not. Invalid input
// re-renders the settings page with the non-secret input kept and nothing stored.
func (s *Server) saveWorldtreeSettings(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	sess := sessionOf(c)
	f := form.ParseWorldtreeSettings(c.Request())
	errs := f.Validate()
	status := http.StatusUnprocessableEntity
	var saved settings.Worldtree
	if errs.OK() {
		var err error
		saved, err = settings.SaveWorldtree(ctx, s.opts.Store, f.Update(), settings.Actor{Name: sess.Username, IP: c.RealIP()})
		if refused, st, ok := s.refusedForm(c, err); ok {
			errs, status = refused, st
		} else if errs = form.WorldtreeErrors(err); errs.OK() && err != nil {
			return fmt.Errorf("admin: save worldtree settings: %w", err)
		}
	}
	if !errs.OK() {
		stored, err := settings.LoadWorldtree(ctx, s.opts.Store)
		if err != nil {
			return fmt.Errorf("admin: save worldtree settings: %w", err)
		}
		v := storedWorldtreeView(stored)
		v.BaseURL = f.KeptBaseURL()
		v.ClearAdmin, v.ClearConsumer = f.ClearAdminKey, f.ClearConsumerKey
		v.Errors = errs
		c.Set(worldtreeFormKey, v)
		return s.renderSettings(c, status, nil)
	}
	s.worldtree.set(true)

	result, ok := s.testWorldtree(c.Request().Context(), saved)
	page, target := "/settings", "/settings#worldtree"
	if ok {
		page, target = "/worldtree", "/worldtree"
	}
	s.worldtree.putResult(sess.ID, page, result, time.Now())
	return c.Redirect(http.StatusSeeOther, target)
}

// testWorldtree calls GET /me with the saved settings, bounded by worldtreeTestTimeout, and
// returns the one message that reports the save: who the key is when Worldtree answered (ok),
// why the test failed otherwise. The message never holds a key.
func (s *Server) testWorldtree(ctx context.Context, st settings.Worldtree) (templates.Flash, bool) {
	ctx, cancel := context.WithTimeout(ctx, worldtreeTestTimeout)
	defer cancel()
	client, err := st.NewClient(worldtree.WithTimeout(worldtreeTestTimeout), worldtree.WithLogger(s.log))
	if err != nil {
		return templates.Flash{Kind: templates.FlashWarning,
			Message: "Saved, but the stored settings cannot be used: " + worldtree.DescribeError(err)}, false
	}
	me, err := client.GetMe(ctx)
	if err != nil {
		var urlErr *url.Error
		prefix := "Saved, but the connection test failed: "
		if errors.As(err, &urlErr) || errors.Is(err, context.DeadlineExceeded) {
			prefix = "Saved, but Worldtree could not be reached: "
		}
		return templates.Flash{Kind: templates.FlashWarning, Message: prefix + worldtree.DescribeError(err)}, false
	}
	msg := connectedMessage(identityFromMe(me))
	for _, k := range []string{st.DefaultKey, st.AdminKey, st.ConsumerKey} {
		if k != "" {
			msg = strings.ReplaceAll(msg, k, "[REDACTED]") // a server echoing a key into /me
		}
	}
	return templates.Flash{Kind: templates.FlashSuccess, Message: msg}, true
}

// connectedMessage is the result of a save whose connection test passed, e.g. "Saved. Connected
// as alice (scopes conversations.read, persona.read)."
func connectedMessage(id overviewIdentity) string {
	who := "Saved. Connected to Worldtree"
	if id.UserID != "" {
		who = "Saved. Connected as " + clip(id.UserID, 80)
	}
	scopes := "no scopes"
	if len(id.Scopes) > 0 {
		scopes = "scopes " + clip(strings.Join(id.Scopes, ", "), 300)
	}
	return who + " (" + scopes + ")."
}
