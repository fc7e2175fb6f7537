package templates

import (
	"strconv"

	"github.com/kimiapp/kimi/app/admin/form"
)

// Module states as the /modules pages show them (the host's lifecycle
// state refined by the visible health of a running module).
const (
	ModuleRunning     = "running"
	ModuleStarting    = "starting"
	ModuleDegraded    = "degraded"
	ModuleFailed      = "failed"
	ModuleDisabled    = "disabled"
	ModuleStopped     = "stopped"
	ModuleNotSelected = "not selected"
)

// ModulesView is the module list (/modules).
type ModulesView struct {
	Rows []ModuleRow
	// FromEnv: KIMI_MODULES sets the selection, so the toggles are off.
	FromEnv bool
	// Selection is the selection in effect, in words.
	Selection string
	// Problems are selection-level refusals.
	Problems []string
	// Live is the SSE address the page's live region listens to.
	Live string
}

// ModuleRow is one module of the list (and of its live fragment).
type ModuleRow struct {
	Name, Version string
	// Description is what the module does, from its spec ("" none).
	Description string
	Enabled     bool
	State       string // one of the Module* states
	// Running: the host runs the module (its health may still be bad), so
	// Restart is offered and its figures are live. A module that is neither
	// running nor starting shows none.
	Running bool
	// Reason says why the module is disabled or failed (or what degrades it).
	Reason string
	// Detail is the health detail; Age its age in words ("" when never reported).
	Detail, Age string
	Metrics     []Stat
	FromEnv     bool
	// Goroutines is the module's goroutine count ("" when not counted).
	Goroutines string
	// RunningLong are its callbacks past their budget ("running long:
	// command /ping for 4 s").
	RunningLong []string
}

// ModuleHealthView is the overview's at-a-glance module health: counts by
// state and the modules, worst first.
type ModuleHealthView struct {
	Counts []ModuleCount
	Rows   []ModuleRow
	Live   string
}

// ModuleCount is how many modules are in one state.
type ModuleCount struct {
	State string
	N     int
}

// ModuleView is a module's page (/modules/{name}).
type ModuleView struct {
	Row      ModuleRow
	Manifest []ManifestEntry
	Tools    []ModuleTool
	Chart    HealthChart
	History  []HealthPoint // newest first, as a table under the chart
	Settings ModuleSettingsView
	Jobs     []ModuleJob
	Guilds   []ModuleGuildLink
	// Storage is the module's tables with row counts; StorageNote says why
	// it is empty.
	Storage     []Stat
	StorageNote string
	FromEnv     bool
}

// ManifestEntry is one line of the manifest: what and the values ("none"
// when empty).
type ManifestEntry struct {
	Label  string
	Values []string
}

// ModuleTool is a tool the module registered, with its tier.
type ModuleTool struct {
	Name, Description, Tier, Where string
	// HasStats shows the tool's assistant calls over 30 days: Calls ("12",
	// "—" for none) and ErrorRate ("8.3%", "—" for no calls).
	HasStats         bool
	Calls, ErrorRate string
}

// ModuleJob is one row of a module's jobs table.
type ModuleJob struct {
	Key, Handler string
	// Next is the next run relative to now ("in 5 minutes"), NextAt its
	// <time datetime> (RFC 3339, UTC) and NextExact its tooltip.
	Next, NextAt, NextExact string
	// Every is the interval ("" for a one-shot job).
	Every     string
	Attempt   int
	LastError string
	// Holder is the process running it now ("" when none).
	Holder string
	// RunPath and CancelPath are the job's two controls (the key
	// path-escaped); empty when the admin has no scheduler to ask.
	RunPath, CancelPath string
}

// ModuleGuildLink links a guild's page, where the module's guild settings are.
type ModuleGuildLink struct {
	ID, Status string
	Name       Name
}

// ModuleSettingsView is the deployment-settings form.
type ModuleSettingsView struct {
	Label  string
	Fields []SettingInput
	// ReadOnly are the settings the form does not edit (environment only).
	ReadOnly []Stat
	Errors   form.Errors
}

// SettingInput is one input of the deployment-settings form.
type SettingInput struct {
	Name, ID, Label, Kind, Help string
	Value                       string // never a secret's
	Secret, SecretSet           bool
	Choices                     []string
	Multiline                   bool
	Min, Max                    string // bounds as text, "" when none
	Source                      string // default, saved, or the variable
	Current                     string // the value in effect when not saved here (the input's placeholder)
	Error                       string
}

// HealthChart is a step chart of a module's health over time on a fixed
// viewBox: the x axis is time, the y axis the state (healthy at the top).
type HealthChart struct {
	Points   []HealthPoint
	Polyline string // "x,y x,y …" of the step line
	From, To string // the time axis' ends, in words
	Empty    bool
}

// HealthPoint is one health change, placed on the chart.
type HealthPoint struct {
	X, Y   int
	At     string // exact time
	Ago    string
	State  string
	Detail string
}

// Chart geometry: the viewBox and the plot area inside it.
const (
	ChartW, ChartH        = 600, 180
	ChartLeft, ChartRight = 90, 585
	ChartTop, ChartBottom = 15, 150
)

// ChartStates are the y-axis rows, top to bottom.
var ChartStates = []string{"healthy", "starting", "degraded", "failed"}

// ChartY is the y of a health state's row.
func ChartY(state string) int {
	for i, s := range ChartStates {
		if s == state {
			return ChartTop + i*(ChartBottom-ChartTop)/(len(ChartStates)-1)
		}
	}
	return ChartBottom
}

func itoa(n int) string { return strconv.Itoa(n) }

// stateKind is a state's badge colour; StateBadge adds its icon and text.
func stateKind(state string) string {
	switch state {
	case ModuleRunning:
		return "success"
	case ModuleDegraded, ModuleStarting:
		return "warning"
	case ModuleFailed:
		return "danger"
	}
	return "neutral"
}

// settingChoices are a select's options: the choices, or true/false.
func settingChoices(f SettingInput) []string {
	if len(f.Choices) > 0 {
		return f.Choices
	}
	return []string{"true", "false"}
}

func settingType(f SettingInput) string {
	if f.Secret {
		return "password"
	}
	return "text"
}

// secretPlaceholder says whether a secret is set without showing it.
func secretPlaceholder(f SettingInput) string {
	if f.SecretSet {
		return "set — leave blank to keep"
	}
	return "not set"
}

// settingHint is a setting's help with its kind, bounds and source.
func settingHint(f SettingInput) string {
	h := f.Help
	add := func(s string) {
		if h != "" {
			h += " "
		}
		h += s
	}
	switch f.Kind {
	case "int":
		add("A whole number.")
	case "float":
		add("A number.")
	}
	switch {
	case f.Min != "" && f.Max != "":
		add("From " + f.Min + " to " + f.Max + ".")
	case f.Min != "":
		add("At least " + f.Min + ".")
	case f.Max != "":
		add("At most " + f.Max + ".")
	}
	if f.Secret {
		if f.SecretSet {
			add("Set — leave blank to keep it.")
		} else {
			add("Not set.")
		}
	}
	if f.Source != "" {
		add("Now from: " + f.Source + ".")
	}
	return h
}
