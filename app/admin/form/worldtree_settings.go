package form

import (
	"errors"
	"net/http"
	"strings"

	"github.com/kimiapp/kimi/app/settings"
)

// Field names of the Worldtree settings form (POST /settings/worldtree), shared by
// worldtree_settings.templ and the save handler. The value fields carry the names the settings
// package keys its errors by, so an *settings.Error maps onto the form field for field.
const (
	WorldtreeBaseURL          = settings.FieldWorldtreeBaseURL
	WorldtreeDefaultKey       = settings.FieldWorldtreeDefaultKey
	WorldtreeAdminKey         = settings.FieldWorldtreeAdminKey
	WorldtreeConsumerKey      = settings.FieldWorldtreeConsumerKey
	WorldtreeClearAdminKey    = "clear_admin_key"
	WorldtreeClearConsumerKey = "clear_consumer_key"
)

// MsgWorldtreeNotSaved is the page-level message of a refused save.
const MsgWorldtreeNotSaved = "The Worldtree settings were not saved. Correct the fields marked below."

// WorldtreeSettings is the submitted Worldtree settings form. A blank key keeps the stored one;
// a ticked clear box removes it.
type WorldtreeSettings struct {
	BaseURL          string
	DefaultKey       string
	AdminKey         string
	ConsumerKey      string
	ClearAdminKey    bool
	ClearConsumerKey bool
}

// ParseWorldtreeSettings reads the form from r.
func ParseWorldtreeSettings(r *http.Request) WorldtreeSettings {
	return WorldtreeSettings{
		BaseURL:          value(r, WorldtreeBaseURL),
		DefaultKey:       value(r, WorldtreeDefaultKey),
		AdminKey:         value(r, WorldtreeAdminKey),
		ConsumerKey:      value(r, WorldtreeConsumerKey),
		ClearAdminKey:    checked(r, WorldtreeClearAdminKey),
		ClearConsumerKey: checked(r, WorldtreeClearConsumerKey),
	}
}

// Update is the form as a change to the stored settings.
func (f WorldtreeSettings) Update() settings.WorldtreeUpdate {
	return settings.WorldtreeUpdate{
		BaseURL:     f.BaseURL,
		DefaultKey:  settings.KeyUpdate{Value: f.DefaultKey},
		AdminKey:    settings.KeyUpdate{Value: f.AdminKey, Clear: f.ClearAdminKey},
		ConsumerKey: settings.KeyUpdate{Value: f.ConsumerKey, Clear: f.ClearConsumerKey},
	}
}

// Validate checks the form on its own (what needs the stored keys, such as a first save without
// a default key, is checked by settings.SaveWorldtree; WorldtreeErrors maps its refusal). A
// refusal carries a FieldForm message above the field messages.
func (f WorldtreeSettings) Validate() Errors {
	return WorldtreeErrors(f.Update().Validate())
}

// WorldtreeErrors turns a refusal of settings.SaveWorldtree or WorldtreeUpdate.Validate into
// Errors with the FieldForm message; nil for nil. Any other error is a server error, not a form
// error, and yields nil.
func WorldtreeErrors(err error) Errors { return settingsRefusal(err, MsgWorldtreeNotSaved, nil) }

// settingsRefusal turns a *settings.Error into Errors: each field's
// message on its field (on FieldForm instead when known is set and says
// the form has no such field), then notSaved on FieldForm; nil for nil or
// any other error (a server error, not a form error).
func settingsRefusal(err error, notSaved string, known func(field string) bool) Errors {
	var invalid *settings.Error
	if !errors.As(err, &invalid) {
		return nil
	}
	var e Errors
	for field, msg := range invalid.Fields {
		if known != nil && !known(field) {
			field = FieldForm
		}
		e.Add(field, msg)
	}
	e.Add(FieldForm, notSaved)
	return e
}

// KeptBaseURL is the base URL to show again in a refused form: the input trimmed, or "" when it
// carries a user name or password (a secret is never echoed back).
func (f WorldtreeSettings) KeptBaseURL() string {
	if settings.HasUserInfo(f.BaseURL) {
		return ""
	}
	return strings.TrimSpace(f.BaseURL)
}
