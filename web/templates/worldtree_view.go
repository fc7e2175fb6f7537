package templates

// WorldtreeSettingsView is the Worldtree section of the settings page. It never holds a key:
// only whether each one is stored.
type WorldtreeSettingsView struct {
	Configured     bool
	BaseURL        string // the stored URL, or the operator's input after an error
	DefaultKeySet  bool
	AdminKeySet    bool
	ConsumerKeySet bool
	// ClearAdmin and ClearConsumer keep the "clear" boxes ticked after an error.
	ClearAdmin    bool
	ClearConsumer bool
	Errors        map[string]string // by form field name (form.Worldtree*), form.FieldForm above the form
	// Result is the outcome of the last save when its connection test failed ("Saved, but …"),
	// shown once above the form; nil otherwise.
	Result *Flash
}

// WorldtreeView is the /worldtree page's data. Each section has its own error sentence, so one
// failing endpoint does not blank the page.
type WorldtreeView struct {
	Configured bool
	BaseURL    string
	Notice     string // a page-level problem (for example the settings cannot be used)
	// Unavailable is set when every section failed with the same cause: the page shows Notice
	// alone instead of four identical section errors.
	Unavailable bool

	Identity      *WorldtreeIdentity
	IdentityError string

	Templates      []WorldtreeTemplate
	TemplatesError string

	Agents      []WorldtreeAgent
	AgentsError string

	Sessions         []WorldtreeSession
	SessionsError    string
	SessionsFirstURL string // back to the first page; empty on the first page
	SessionsNextURL  string // the next page; empty on the last page
	IncludeArchived  bool
	ArchivedURL      string // the same view with the include-archived toggle flipped
}

// WorldtreeIdentity is GET /me.
type WorldtreeIdentity struct {
	UserID   string
	Tier     string
	KeyID    string
	KeyLabel string
	Scopes   []string
}

// WorldtreeTemplate is one ephemeral template of GET /capabilities.
type WorldtreeTemplate struct {
	Name          string
	DefaultModel  string
	AllowedModels []string
	PromptMax     string // "32 KiB", or "" when not given
}

// KeyValue is one labelled value.
type KeyValue struct {
	Key   string
	Value string
}

// WorldtreeAgent is one agent with its persona traits and live persona state.
type WorldtreeAgent struct {
	ID           string
	Name         string
	Description  string
	Version      string
	Capabilities []string
	Traits       []KeyValue
	Persona      *WorldtreePersona // nil: see PersonaNote / PersonaError
	PersonaNote  string            // why there is no persona state (not configured, not read)
	PersonaError string            // the persona read failed
}

// WorldtreePersona is a live persona snapshot, numbers already formatted.
type WorldtreePersona struct {
	PAD             []Stat // pleasure, arousal, dominance with the baseline as hint
	DominantEmotion string
	UpdatedAt       string
}

// WorldtreeSession is one row of the session list.
type WorldtreeSession struct {
	ID         string
	Name       string
	AgentID    string
	Created    string
	LastActive string
	Archived   bool
	Tags       []string
}
