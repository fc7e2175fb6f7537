package form

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/settings"
)

// Field names of the /assistant provider form (POST /assistant), shared by
// assistant.templ and the save handler. The value fields carry the names
// the settings package keys its errors by.
const (
	AssistantBaseURL             = settings.FieldAssistantBaseURL
	AssistantAPIKey              = settings.FieldAssistantAPIKey
	AssistantClearAPIKey         = "clear_api_key"
	AssistantModel               = settings.FieldAssistantModel
	AssistantModelCustom         = "model_custom"
	AssistantContextWindow       = settings.FieldAssistantContextWindow
	AssistantMaxTokens           = settings.FieldAssistantMaxTokens
	AssistantTemperature         = settings.FieldAssistantTemperature
	AssistantTimeout             = settings.FieldAssistantTimeout
	AssistantThinking            = settings.FieldAssistantThinking
	AssistantPrivateNetwork      = settings.FieldAssistantPrivateNetwork
	AssistantFallbackBaseURL     = settings.FieldAssistantFallbackBaseURL
	AssistantFallbackAPIKey      = settings.FieldAssistantFallbackAPIKey
	AssistantClearFallbackAPIKey = "clear_fallback_api_key"
	AssistantFallbackModel       = settings.FieldAssistantFallbackModel
)

// MsgAssistantNotSaved is the page-level message of a refused save.
const MsgAssistantNotSaved = "The provider settings were not saved. Correct the fields marked below."

// Assistant is the submitted provider form, as typed. A blank key keeps
// the stored one; a ticked clear box removes it. Fields the environment
// sets are locked: the page disables them and the save keeps the stored
// values.
type Assistant struct {
	BaseURL, APIKey, Model                         string
	ClearAPIKey                                    bool
	ContextWindow, MaxTokens, Temperature          string
	Timeout, Thinking                              string
	AllowPrivateNetwork                            bool
	FallbackBaseURL, FallbackAPIKey, FallbackModel string
	ClearFallbackAPIKey                            bool
	Locked                                         settings.AssistantLocks
}

// ParseAssistant reads the form from r; locked names the fields the
// environment sets. A model typed in the free-text box wins over the list.
func ParseAssistant(r *http.Request, locked settings.AssistantLocks) Assistant {
	model := strings.TrimSpace(value(r, AssistantModelCustom))
	if model == "" {
		model = value(r, AssistantModel)
	}
	return Assistant{
		BaseURL: value(r, AssistantBaseURL), APIKey: value(r, AssistantAPIKey), ClearAPIKey: checked(r, AssistantClearAPIKey),
		Model: model, ContextWindow: value(r, AssistantContextWindow), MaxTokens: value(r, AssistantMaxTokens),
		Temperature: value(r, AssistantTemperature), Timeout: value(r, AssistantTimeout), Thinking: value(r, AssistantThinking),
		AllowPrivateNetwork: checked(r, AssistantPrivateNetwork),
		FallbackBaseURL:     value(r, AssistantFallbackBaseURL), FallbackAPIKey: value(r, AssistantFallbackAPIKey),
		ClearFallbackAPIKey: checked(r, AssistantClearFallbackAPIKey), FallbackModel: value(r, AssistantFallbackModel),
		Locked: locked,
	}
}

// Update is the form as a change to the stored settings, with the
// problems of its number fields (a blank number is its default).
func (f Assistant) Update() (settings.AssistantUpdate, Errors) {
	var e Errors
	u := settings.AssistantUpdate{
		BaseURL: f.BaseURL, APIKey: settings.KeyUpdate{Value: f.APIKey, Clear: f.ClearAPIKey}, Model: f.Model,
		Thinking: settings.Thinking(strings.TrimSpace(f.Thinking)), AllowPrivateNetwork: f.AllowPrivateNetwork,
		FallbackBaseURL: f.FallbackBaseURL, FallbackAPIKey: settings.KeyUpdate{Value: f.FallbackAPIKey, Clear: f.ClearFallbackAPIKey},
		FallbackModel: f.FallbackModel, Locked: f.Locked,
		MaxTokens: settings.DefaultAssistantMaxTokens, Timeout: settings.DefaultAssistantTimeout,
	}
	whole := func(field, raw string, dest *int, msg string) {
		raw = strings.ReplaceAll(strings.TrimSpace(raw), ",", "")
		if raw == "" {
			return
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			e.Add(field, msg)
			return
		}
		*dest = n
	}
	whole(AssistantContextWindow, f.ContextWindow, &u.ContextWindow, "Enter the context window as a whole number of tokens, or leave it blank.")
	whole(AssistantMaxTokens, f.MaxTokens, &u.MaxTokens, "Enter the output limit as a whole number of tokens.")
	secs := int(settings.DefaultAssistantTimeout / time.Second)
	whole(AssistantTimeout, f.Timeout, &secs, "Enter the request timeout as a whole number of seconds.")
	if secs > int(settings.MaxAssistantTimeout/time.Second) { // avoid overflowing a Duration
		secs = int(settings.MaxAssistantTimeout/time.Second) + 1
	}
	u.Timeout = time.Duration(secs) * time.Second
	if t := strings.TrimSpace(f.Temperature); t != "" {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			e.Add(AssistantTemperature, "Enter a temperature such as 0.6 or 1, or leave it blank to use the provider's default.")
		} else {
			u.Temperature = &v
		}
	}
	return u, e
}

// Validate checks the form on its own: its numbers, then the settings'
// rules. A refusal carries a FieldForm message above the field messages.
func (f Assistant) Validate() Errors {
	u, e := f.Update()
	for field, msg := range AssistantErrors(u.Validate()) {
		e.Add(field, msg)
	}
	if !e.OK() {
		e.Add(FieldForm, MsgAssistantNotSaved)
	}
	return e
}

// AssistantErrors turns a refusal of settings.SaveAssistant into Errors
// with the FieldForm message; nil for nil or any other error.
func AssistantErrors(err error) Errors { return settingsRefusal(err, MsgAssistantNotSaved, nil) }

// Kept is the form to show again after a refusal: the input as typed but
// never a key, no base URL that carries a user name or password, and no
// base URL's query or fragment (a pasted ?api_key= is a key too).
func (f Assistant) Kept() Assistant {
	f.APIKey, f.FallbackAPIKey = "", ""
	f.BaseURL, f.FallbackBaseURL = keptBaseURL(f.BaseURL), keptBaseURL(f.FallbackBaseURL)
	return f
}

// keptBaseURL is a refused base URL as it may be shown again: "" when it
// carries user info, else cut before any query or fragment.
func keptBaseURL(raw string) string {
	if settings.HasUserInfo(raw) {
		return ""
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return raw[:i]
	}
	return raw
}
