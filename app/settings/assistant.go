package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// Keys of the assistant's model-provider settings in the store's settings
// table. The API keys are secret settings (left out of a backup without
// secrets).
const (
	SettingAssistantBaseURL         = "assistant.base_url"
	SettingAssistantAPIKey          = "assistant.api_key"
	SettingAssistantModel           = "assistant.model"
	SettingAssistantContextWindow   = "assistant.context_window"
	SettingAssistantMaxTokens       = "assistant.max_tokens"
	SettingAssistantTemperature     = "assistant.temperature"
	SettingAssistantTimeout         = "assistant.timeout_seconds"
	SettingAssistantThinking        = "assistant.thinking"
	SettingAssistantPrivateNetwork  = "assistant.allow_private_network"
	SettingAssistantFallbackBaseURL = "assistant.fallback.base_url"
	SettingAssistantFallbackAPIKey  = "assistant.fallback.api_key"
	SettingAssistantFallbackModel   = "assistant.fallback.model"
)

// AuditActionAssistant is the audit action of a save of the provider
// settings; its detail names what changed, never a key.
const AuditActionAssistant = "assistant.settings"

// Field names of the assistant settings: the keys of Error.Fields and the
// names of the /assistant form's fields (app/admin/form uses these).
const (
	FieldAssistantBaseURL         = "base_url"
	FieldAssistantAPIKey          = "api_key"
	FieldAssistantModel           = "model"
	FieldAssistantContextWindow   = "context_window"
	FieldAssistantMaxTokens       = "max_tokens"
	FieldAssistantTemperature     = "temperature"
	FieldAssistantTimeout         = "timeout_seconds"
	FieldAssistantThinking        = "thinking"
	FieldAssistantPrivateNetwork  = "allow_private_network"
	FieldAssistantFallbackBaseURL = "fallback_base_url"
	FieldAssistantFallbackAPIKey  = "fallback_api_key"
	FieldAssistantFallbackModel   = "fallback_model"
)

// Defaults and bounds of the assistant settings.
const (
	// DefaultAssistantBaseURL is Moonshot's Kimi, prefilled on the form.
	DefaultAssistantBaseURL = "https://api.moonshot.ai/v1"
	// DefaultAssistantMaxTokens is always sent: Moonshot's own default is
	// about 1,024 and reasoning shares it.
	DefaultAssistantMaxTokens = 4096
	MaxAssistantMaxTokens     = 1_000_000
	// MinAssistantContextWindow..MaxAssistantContextWindow bound a context
	// window; 0 means unknown.
	MinAssistantContextWindow = 1024
	MaxAssistantContextWindow = 10_000_000
	MaxAssistantTemperature   = 2.0
	DefaultAssistantTimeout   = 10 * time.Minute
	MinAssistantTimeout       = 10 * time.Second
	MaxAssistantTimeout       = time.Hour
	MaxModelIDBytes           = 256
)

// Thinking is the Thinking setting: sent as Moonshot's thinking switch only
// when it is not ThinkingDefault.
type Thinking string

// The Thinking choices.
const (
	ThinkingDefault Thinking = "default"
	ThinkingOn      Thinking = "on"
	ThinkingOff     Thinking = "off"
)

// Backend is one model endpoint: a base URL, its key, the model.
type Backend struct {
	BaseURL string
	APIKey  string // a secret: shown only as set or not set
	Model   string
}

// Configured reports whether the backend names an endpoint and a model.
func (b Backend) Configured() bool { return b.BaseURL != "" && b.Model != "" }

// Assistant is the stored model-provider configuration. Print it with %v
// or slog and the keys show only as set or not set.
type Assistant struct {
	Primary Backend
	// Fallback is optional (a zero Backend: none).
	Fallback Backend
	// ContextWindow is the model's context in tokens (0: unknown).
	ContextWindow int
	// MaxTokens is the output limit sent on every request.
	MaxTokens int
	// Temperature, when nil, is not sent.
	Temperature *float64
	// Timeout bounds one request.
	Timeout             time.Duration
	Thinking            Thinking
	AllowPrivateNetwork bool
}

// DefaultAssistant is what an empty store gives: Moonshot's base URL, the
// default output limit and timeout, no key, no model.
func DefaultAssistant() Assistant {
	return Assistant{Primary: Backend{BaseURL: DefaultAssistantBaseURL}, MaxTokens: DefaultAssistantMaxTokens,
		Timeout: DefaultAssistantTimeout, Thinking: ThinkingDefault}
}

// Configured reports whether the primary backend can be called: a base
// URL, a model and a key — or, with the private-network switch on, no key
// (a local server such as Ollama needs none).
func (a Assistant) Configured() bool {
	return a.Primary.Configured() && (a.Primary.APIKey != "" || a.AllowPrivateNetwork)
}

// HasFallback reports whether a fallback is set up.
func (a Assistant) HasFallback() bool { return a.Fallback.BaseURL != "" }

// String describes the settings without their keys.
func (a Assistant) String() string {
	return fmt.Sprintf("settings.Assistant{base: %s, key set: %t, model: %s, fallback: %s, key set: %t, model: %s}",
		a.Primary.BaseURL, a.Primary.APIKey != "", a.Primary.Model, a.Fallback.BaseURL, a.Fallback.APIKey != "", a.Fallback.Model)
}

// GoString is String, so %#v does not print the keys either.
func (a Assistant) GoString() string { return a.String() }

// LogValue keeps the keys out of slog output.
func (a Assistant) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", a.Primary.BaseURL), slog.Bool("api_key_set", a.Primary.APIKey != ""),
		slog.String("model", a.Primary.Model), slog.String("fallback_base_url", a.Fallback.BaseURL),
		slog.Bool("fallback_api_key_set", a.Fallback.APIKey != ""), slog.String("fallback_model", a.Fallback.Model))
}

var (
	_ fmt.Stringer   = Assistant{}
	_ fmt.GoStringer = Assistant{}
	_ slog.LogValuer = Assistant{}
)

// AssistantEnv are the environment's overrides of the primary backend
// (KIMI_LLM_BASE_URL, KIMI_LLM_MODEL, KIMI_LLM_API_KEY): a non-empty value
// replaces the stored one, and its field is locked on the form.
type AssistantEnv struct {
	BaseURL, Model, APIKey string
}

// Apply returns a with the environment's values in place of the stored ones.
func (e AssistantEnv) Apply(a Assistant) Assistant {
	if e.BaseURL != "" {
		a.Primary.BaseURL = e.BaseURL
	}
	if e.Model != "" {
		a.Primary.Model = e.Model
	}
	if e.APIKey != "" {
		a.Primary.APIKey = e.APIKey
	}
	return a
}

// Locks says which of the form's fields the environment sets.
func (e AssistantEnv) Locks() AssistantLocks {
	return AssistantLocks{BaseURL: e.BaseURL != "", Model: e.Model != "", APIKey: e.APIKey != ""}
}

// AssistantLocks are the fields the environment sets: a save keeps their
// stored values (the form does not submit them).
type AssistantLocks struct {
	BaseURL, Model, APIKey bool
}

// AssistantUpdate is a submitted change to the assistant settings. A blank
// key keeps the stored one; KeyUpdate.Clear removes it.
type AssistantUpdate struct {
	BaseURL             string
	APIKey              KeyUpdate
	Model               string
	ContextWindow       int
	MaxTokens           int
	Temperature         *float64
	Timeout             time.Duration
	Thinking            Thinking
	AllowPrivateNetwork bool
	FallbackBaseURL     string
	FallbackAPIKey      KeyUpdate
	FallbackModel       string
	// Locked fields keep their stored values; their input is ignored.
	Locked AssistantLocks
}

// Normalize trims the update's surrounding whitespace and a base URL's
// trailing slashes.
func (u AssistantUpdate) Normalize() AssistantUpdate {
	u.BaseURL = strings.TrimRight(strings.TrimSpace(u.BaseURL), "/")
	u.FallbackBaseURL = strings.TrimRight(strings.TrimSpace(u.FallbackBaseURL), "/")
	u.Model, u.FallbackModel = strings.TrimSpace(u.Model), strings.TrimSpace(u.FallbackModel)
	u.APIKey.Value, u.FallbackAPIKey.Value = strings.TrimSpace(u.APIKey.Value), strings.TrimSpace(u.FallbackAPIKey.Value)
	if u.Thinking == "" {
		u.Thinking = ThinkingDefault
	}
	return u
}

// Validate checks the update on its own; whether a fallback's key exists
// once merged is not required (a keyless fallback is refused at save).
func (u AssistantUpdate) Validate() error {
	u = u.Normalize()
	f := map[string]string{}
	if !u.Locked.BaseURL {
		if u.BaseURL == "" {
			f[FieldAssistantBaseURL] = "Enter the provider's base URL, for example " + DefaultAssistantBaseURL + "."
		} else if msg := ProviderURLProblem(u.BaseURL); msg != "" {
			f[FieldAssistantBaseURL] = msg
		}
	}
	if !u.Locked.APIKey {
		if msg := apiKeyProblem(u.APIKey, "The API key"); msg != "" {
			f[FieldAssistantAPIKey] = msg
		}
	}
	if !u.Locked.Model {
		if msg := ModelIDProblem(u.Model); msg != "" {
			f[FieldAssistantModel] = msg
		}
	}
	if u.ContextWindow != 0 && (u.ContextWindow < MinAssistantContextWindow || u.ContextWindow > MaxAssistantContextWindow) {
		f[FieldAssistantContextWindow] = fmt.Sprintf("Enter the model's context window in tokens, from %d to %d, or leave it blank if unknown.",
			MinAssistantContextWindow, MaxAssistantContextWindow)
	}
	if u.MaxTokens < 1 || u.MaxTokens > MaxAssistantMaxTokens {
		f[FieldAssistantMaxTokens] = fmt.Sprintf("Enter the most tokens an answer may use, from 1 to %d (default %d).", MaxAssistantMaxTokens, DefaultAssistantMaxTokens)
	} else if u.ContextWindow != 0 && u.MaxTokens >= u.ContextWindow {
		f[FieldAssistantMaxTokens] = "The output limit must be smaller than the context window: the prompt needs room too."
	}
	if t := u.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxAssistantTemperature) {
		f[FieldAssistantTemperature] = "Enter a temperature from 0 to 2, or leave it blank to use the provider's default."
	}
	if u.Timeout < MinAssistantTimeout || u.Timeout > MaxAssistantTimeout {
		f[FieldAssistantTimeout] = fmt.Sprintf("Enter a request timeout from %d to %d seconds.", int(MinAssistantTimeout.Seconds()), int(MaxAssistantTimeout.Seconds()))
	}
	switch u.Thinking {
	case ThinkingDefault, ThinkingOn, ThinkingOff:
	default:
		f[FieldAssistantThinking] = "Choose the provider's default, on or off."
	}
	fallbackUsed := u.FallbackBaseURL != "" || u.FallbackModel != "" || u.FallbackAPIKey.Value != ""
	if fallbackUsed {
		if u.FallbackBaseURL == "" {
			f[FieldAssistantFallbackBaseURL] = "Enter the fallback's base URL, or clear the other fallback fields to have none."
		} else if msg := ProviderURLProblem(u.FallbackBaseURL); msg != "" {
			f[FieldAssistantFallbackBaseURL] = msg
		}
		if u.FallbackModel == "" {
			f[FieldAssistantFallbackModel] = "Enter the fallback's model id, or clear the other fallback fields to have none."
		}
	}
	if msg := ModelIDProblem(u.FallbackModel); msg != "" {
		f[FieldAssistantFallbackModel] = msg
	}
	if msg := apiKeyProblem(u.FallbackAPIKey, "The fallback's API key"); msg != "" {
		f[FieldAssistantFallbackAPIKey] = msg
	}
	if len(f) > 0 {
		return &Error{Fields: f}
	}
	return nil
}

// ProviderURLProblem returns an operator-facing sentence for a base URL a
// model provider cannot have, or "". It never repeats the URL.
func ProviderURLProblem(raw string) string {
	if len(raw) > MaxBaseURLBytes {
		return fmt.Sprintf("The base URL is longer than %d bytes.", MaxBaseURLBytes)
	}
	if HasUserInfo(raw) {
		return "The base URL must not contain a user name or password. Enter the key in the API key field instead."
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "Use an absolute http:// or https:// address, for example " + DefaultAssistantBaseURL + "."
	case u.Hostname() == "":
		return "The base URL has no host, for example " + DefaultAssistantBaseURL + "."
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(raw, "?#"):
		return "The base URL must not have a query or fragment; it ends where /chat/completions is appended (…/v1)."
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "The base URL has an invalid port (1-65535)."
		}
	}
	return ""
}

// ModelIDProblem returns a sentence for a model id that cannot be one, or
// "" (a blank id is valid: the model is chosen later).
func ModelIDProblem(id string) string {
	switch {
	case len(id) > MaxModelIDBytes:
		return fmt.Sprintf("The model id is longer than %d bytes.", MaxModelIDBytes)
	case strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		return "The model id contains a space, control or non-ASCII character. Use an id the provider's model list shows."
	}
	return ""
}

func apiKeyProblem(k KeyUpdate, label string) string {
	switch {
	case k.Clear && k.Value != "":
		return "Either enter a new key or tick clear, not both."
	case len(k.Value) > MaxKeyBytes:
		return fmt.Sprintf("%s is longer than %d bytes.", label, MaxKeyBytes)
	case strings.IndexFunc(k.Value, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
		return label + " contains a space, control or non-ASCII character. Paste the key alone."
	}
	return ""
}

// assistantKeys are every key the assistant settings store.
var assistantKeys = []string{
	SettingAssistantBaseURL, SettingAssistantAPIKey, SettingAssistantModel, SettingAssistantContextWindow,
	SettingAssistantMaxTokens, SettingAssistantTemperature, SettingAssistantTimeout, SettingAssistantThinking,
	SettingAssistantPrivateNetwork, SettingAssistantFallbackBaseURL, SettingAssistantFallbackAPIKey, SettingAssistantFallbackModel,
}

// LoadAssistant reads the stored settings over DefaultAssistant.
func LoadAssistant(ctx context.Context, st Store) (Assistant, error) {
	a, err := readAssistant(ctx, st.Reader())
	if err != nil {
		return Assistant{}, fmt.Errorf("settings: load assistant: %w", err)
	}
	return a, nil
}

func readAssistant(ctx context.Context, q querier) (Assistant, error) {
	args := make([]any, len(assistantKeys))
	for i, k := range assistantKeys {
		args[i] = k
	}
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM kimi_settings WHERE key IN (?`+strings.Repeat(", ?", len(args)-1)+`)`, args...)
	if err != nil {
		return Assistant{}, err
	}
	defer rows.Close()
	a := DefaultAssistant()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Assistant{}, err
		}
		a.set(k, v)
	}
	return a, rows.Err()
}

// set assigns the stored value of settings key k; a value that does not
// parse leaves the default.
func (a *Assistant) set(k, v string) {
	n, nerr := strconv.Atoi(v)
	switch k {
	case SettingAssistantBaseURL:
		a.Primary.BaseURL = v
	case SettingAssistantAPIKey:
		a.Primary.APIKey = v
	case SettingAssistantModel:
		a.Primary.Model = v
	case SettingAssistantContextWindow:
		if nerr == nil {
			a.ContextWindow = n
		}
	case SettingAssistantMaxTokens:
		if nerr == nil && n > 0 {
			a.MaxTokens = n
		}
	case SettingAssistantTemperature:
		if t, err := strconv.ParseFloat(v, 64); err == nil {
			a.Temperature = &t
		}
	case SettingAssistantTimeout:
		if nerr == nil && n > 0 {
			a.Timeout = time.Duration(n) * time.Second
		}
	case SettingAssistantThinking:
		a.Thinking = Thinking(v)
	case SettingAssistantPrivateNetwork:
		a.AllowPrivateNetwork = v == "true"
	case SettingAssistantFallbackBaseURL:
		a.Fallback.BaseURL = v
	case SettingAssistantFallbackAPIKey:
		a.Fallback.APIKey = v
	case SettingAssistantFallbackModel:
		a.Fallback.Model = v
	}
}

// SaveAssistant validates u, merges it with the stored keys (blank keeps,
// Clear removes; locked fields keep their stored values) and stores the
// result with an AuditActionAssistant row, in one write transaction.
// Invalid input returns a *Error and changes nothing.
func SaveAssistant(ctx context.Context, st Store, u AssistantUpdate, who Actor) (Assistant, error) {
	u = u.Normalize()
	if err := u.Validate(); err != nil {
		return Assistant{}, err
	}
	var saved Assistant
	err := st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readAssistant(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		next := Assistant{
			Primary:       Backend{BaseURL: u.BaseURL, Model: u.Model},
			Fallback:      Backend{BaseURL: u.FallbackBaseURL, Model: u.FallbackModel},
			ContextWindow: u.ContextWindow, MaxTokens: u.MaxTokens, Temperature: u.Temperature, Timeout: u.Timeout,
			Thinking: u.Thinking, AllowPrivateNetwork: u.AllowPrivateNetwork,
		}
		if u.Locked.BaseURL {
			next.Primary.BaseURL = cur.Primary.BaseURL
		}
		if u.Locked.Model {
			next.Primary.Model = cur.Primary.Model
		}
		// A stored key is never carried to another host: a session that
		// could change the base URL would otherwise have the key sent to a
		// server of its choosing.
		moved := map[string]string{}
		if !u.Locked.APIKey && keyKept(cur.Primary.APIKey, u.APIKey) && !sameOrigin(cur.Primary.BaseURL, next.Primary.BaseURL) {
			moved[FieldAssistantAPIKey] = msgKeyMoved
		}
		if keyKept(cur.Fallback.APIKey, u.FallbackAPIKey) && next.Fallback.BaseURL != "" && !sameOrigin(cur.Fallback.BaseURL, next.Fallback.BaseURL) {
			moved[FieldAssistantFallbackAPIKey] = msgKeyMoved
		}
		if len(moved) > 0 {
			return &Error{Fields: moved}
		}
		var changes []string
		next.Primary.APIKey = mergeKey(cur.Primary.APIKey, u.APIKey, u.Locked.APIKey, "API key", &changes)
		next.Fallback.APIKey = mergeKey(cur.Fallback.APIKey, u.FallbackAPIKey, false, "fallback API key", &changes)
		if next.Fallback.BaseURL == "" && next.Fallback.APIKey != "" {
			return &Error{Fields: map[string]string{FieldAssistantFallbackAPIKey: "A fallback key is stored but no fallback base URL is entered: enter the fallback, or tick clear to remove its key."}}
		}
		changes = append(diffAssistant(cur, next), changes...)
		if err := writeSettingsTx(ctx, tx, []settingWrite{
			{SettingAssistantBaseURL, next.Primary.BaseURL, false}, {SettingAssistantAPIKey, next.Primary.APIKey, true},
			{SettingAssistantModel, next.Primary.Model, false}, {SettingAssistantContextWindow, intOrBlank(next.ContextWindow), false},
			{SettingAssistantMaxTokens, strconv.Itoa(next.MaxTokens), false}, {SettingAssistantTemperature, temperatureText(next.Temperature), false},
			{SettingAssistantTimeout, strconv.Itoa(int(next.Timeout / time.Second)), false}, {SettingAssistantThinking, string(next.Thinking), false},
			{SettingAssistantPrivateNetwork, strconv.FormatBool(next.AllowPrivateNetwork), false},
			{SettingAssistantFallbackBaseURL, next.Fallback.BaseURL, false}, {SettingAssistantFallbackAPIKey, next.Fallback.APIKey, true},
			{SettingAssistantFallbackModel, next.Fallback.Model, false},
		}); err != nil {
			return err
		}
		detail := "saved, nothing changed"
		if len(changes) > 0 {
			detail = strings.Join(changes, "; ")
		}
		if err := store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionAssistant, Target: "assistant", Detail: detail, IP: who.IP}); err != nil {
			return err
		}
		saved = next
		return nil
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return Assistant{}, err
		}
		return Assistant{}, fmt.Errorf("settings: save assistant: %w", err)
	}
	return saved, nil
}

// mergeKey is the stored key after upd (locked: the stored key), noting
// the change by name, never by value.
func mergeKey(cur string, upd KeyUpdate, locked bool, name string, changes *[]string) string {
	switch {
	case locked:
		return cur
	case upd.Value != "" && cur == "":
		*changes = append(*changes, name+" set")
		return upd.Value
	case upd.Value != "" && upd.Value != cur:
		*changes = append(*changes, name+" replaced")
		return upd.Value
	case upd.Value != "":
		return cur
	case upd.Clear && cur != "":
		*changes = append(*changes, name+" cleared")
		return ""
	case upd.Clear:
		return ""
	}
	return cur
}

// msgKeyMoved refuses a save that would send a stored key to another host.
const msgKeyMoved = "The base URL now points at another server: enter its API key again (or tick clear), so the stored key is never sent to a new host."

// keyKept reports whether a save keeps the stored key as it is (a blank
// field, no clear).
func keyKept(cur string, upd KeyUpdate) bool { return cur != "" && upd.Value == "" && !upd.Clear }

// sameOrigin reports whether two base URLs reach the same scheme, host and
// port (the path may change: a key belongs to a server).
func sameOrigin(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "http") {
			return "80"
		}
		return "443"
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(strings.TrimSuffix(ua.Hostname(), "."), strings.TrimSuffix(ub.Hostname(), ".")) && port(ua) == port(ub)
}

// diffAssistant names the non-secret changes from cur to next.
func diffAssistant(cur, next Assistant) []string {
	var out []string
	for _, d := range []struct{ name, from, to string }{
		{"base URL", cur.Primary.BaseURL, next.Primary.BaseURL},
		{"model", cur.Primary.Model, next.Primary.Model},
		{"context window", intOrBlank(cur.ContextWindow), intOrBlank(next.ContextWindow)},
		{"max output tokens", strconv.Itoa(cur.MaxTokens), strconv.Itoa(next.MaxTokens)},
		{"temperature", temperatureText(cur.Temperature), temperatureText(next.Temperature)},
		{"request timeout", cur.Timeout.String(), next.Timeout.String()},
		{"thinking", string(cur.Thinking), string(next.Thinking)},
		{"private-network endpoint", onOff(cur.AllowPrivateNetwork), onOff(next.AllowPrivateNetwork)},
		{"fallback base URL", cur.Fallback.BaseURL, next.Fallback.BaseURL},
		{"fallback model", cur.Fallback.Model, next.Fallback.Model},
	} {
		if d.from == d.to {
			continue
		}
		to := d.to
		if to == "" {
			to = "none"
		}
		out = append(out, d.name+" "+to)
	}
	return out
}

func intOrBlank(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func temperatureText(t *float64) string {
	if t == nil {
		return ""
	}
	return strconv.FormatFloat(*t, 'f', -1, 64)
}
