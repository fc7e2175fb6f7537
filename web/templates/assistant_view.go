package templates

import "github.com/kimiapp/kimi/app/admin/form"

// AssistantView is the /assistant page: the live status card, the last
// Test connection, and the provider form. No key is ever in it.
type AssistantView struct {
	// Live is the SSE address of the status region.
	Live   string
	Status AssistantStatusView
	Form   AssistantFormView
	Errors form.Errors
	// Behaviour is the behaviour form (the stored settings, or the refused
	// input) and BehaviourErrors its refusal.
	Behaviour       form.AssistantBehaviour
	BehaviourErrors form.Errors
	// Retention is the transcript retention card.
	Retention AssistantRetentionView
	// Limits is the limits form (stored, or the refused input) and
	// LimitsErrors its refusal.
	Limits       form.AssistantLimits
	LimitsErrors form.Errors
}

// AssistantStatusView is the live part of /assistant: the status card and
// the last Test connection; the SSE endpoint sends it again after every
// change.
type AssistantStatusView struct {
	CSRF       string
	Configured bool
	Demo       bool
	// State is the badge's text, StateKind its kind.
	State, StateKind string
	Problem          string
	Stats            []Stat
	// Test is the last Test connection (nil: none yet).
	Test *AssistantTestView
}

// AssistantTestView is one Test connection.
type AssistantTestView struct {
	OK     bool
	At     string
	Probes []AssistantProbeView
}

// AssistantProbeView is one backend's result.
type AssistantProbeView struct {
	Backend, Endpoint string
	OK                bool
	// Summary is the one-line result: the failed step and its reason.
	Summary string
	Rows    []KeyValue
}

// AssistantFormView is the provider form: the stored values (or the
// refused input, keys never), the model list and the environment's locks.
type AssistantFormView struct {
	BaseURL, Model, ContextWindow, MaxTokens, Temperature, Timeout, Thinking string
	FallbackBaseURL, FallbackModel                                           string
	KeySet, FallbackKeySet                                                   bool
	ClearAPIKey, ClearFallbackAPIKey, AllowPrivateNetwork                    bool
	// Models is the provider's own list (empty: free text only);
	// ModelsNote says why it is missing; ModelUnlisted flags a saved model
	// the list lacks.
	Models        []AssistantModelOption
	ModelsNote    string
	ModelUnlisted bool
	// EnvBaseURL, EnvModel and EnvAPIKey name the variables that set those
	// fields ("" when the field is editable).
	EnvBaseURL, EnvModel, EnvAPIKey string
	// Demo: the provider is the demo model; the form is kept for later.
	Demo bool
}

// AssistantModelOption is one model of the list.
type AssistantModelOption struct {
	ID, Label string
	Selected  bool
}
