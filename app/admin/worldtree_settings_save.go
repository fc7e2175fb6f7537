package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// worldtreeFormKey carries the submitted Worldtree form (with its errors) from the save handler
// into renderSettings, so a refused save re-renders the whole settings page with the input kept.
const worldtreeFormKey = "admin.worldtree_form"

// worldtreeSettingsView is the Worldtree section of the settings page: the form kept by a refused
// save, or the stored settings (keys only as set / not set).
func (s *Server) worldtreeSettingsView(ctx context.Context, c echo.Context) (templates.WorldtreeSettingsView, error) {
	if v, ok := c.Get(worldtreeFormKey).(templates.WorldtreeSettingsView); ok {
		return v, nil
	}
	st, err := settings.LoadWorldtree(ctx, s.opts.Store)
	if err != nil {
		return templates.WorldtreeSettingsView{}, err
	}
	return storedWorldtreeView(st), nil
}

func storedWorldtreeView(st settings.Worldtree) templates.WorldtreeSettingsView {
	return templates.WorldtreeSettingsView{
		Configured: st.Configured(), BaseURL: st.BaseURL, DefaultKeySet: st.DefaultKey != "",
		AdminKeySet: st.AdminKey != "", ConsumerKeySet: st.ConsumerKey != "", Errors: map[string]string{},
	}
}

// saveWorldtreeSettings stores the Worldtree settings form: blank keys keep the stored ones, the
// clear boxes remove them. Errors re-render the settings page with the non-secret input kept.
func (s *Server) saveWorldtreeSettings(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	sess := sessionOf(c)
	upd := settings.WorldtreeUpdate{
		BaseURL:     c.FormValue("base_url"),
		DefaultKey:  settings.KeyUpdate{Value: c.FormValue("default_key")},
		AdminKey:    settings.KeyUpdate{Value: c.FormValue("admin_key"), Clear: c.FormValue("clear_admin_key") != ""},
		ConsumerKey: settings.KeyUpdate{Value: c.FormValue("consumer_key"), Clear: c.FormValue("clear_consumer_key") != ""},
	}
	_, err := settings.SaveWorldtree(ctx, s.opts.Store, upd, settings.Actor{Name: sess.Username, IP: c.RealIP()})
	var invalid *settings.Error
	switch {
	case errors.As(err, &invalid):
		stored, lerr := settings.LoadWorldtree(ctx, s.opts.Store)
		if lerr != nil {
			return fmt.Errorf("admin: worldtree settings: %w", lerr)
		}
		v := storedWorldtreeView(stored)
		v.BaseURL = strings.TrimSpace(upd.BaseURL)
		if settings.HasUserInfo(upd.BaseURL) {
			v.BaseURL = "" // it carries a password: never echo it
		}
		v.ClearAdmin, v.ClearConsumer = upd.AdminKey.Clear, upd.ConsumerKey.Clear
		v.Errors = invalid.Fields
		v.Errors["form"] = "The Worldtree settings were not saved. Correct the fields marked below."
		c.Set(worldtreeFormKey, v)
		return s.renderSettings(c, http.StatusUnprocessableEntity, nil)
	case err != nil:
		return fmt.Errorf("admin: worldtree settings: %w", err)
	}
	s.worldtree.set(true)
	s.setFlash(c, flashWorldtreeSet)
	return c.Redirect(http.StatusSeeOther, "/worldtree")
}
