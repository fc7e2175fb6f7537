// Package templates holds the admin UI's templ components: one shared layout,
// small reusable building blocks (page header, card, field, alert, empty
// state, pagination, tables) and the pages built from them. Components take
// plain view structs; they never touch the store or echo.
//
// Generate with `go tool templ generate`; the *_templ.go files are committed.
package templates

import (
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
)

// Chrome is the per-request data every page's layout needs.
type Chrome struct {
	Title   string // page title (without the product suffix)
	Active  string // NavItem.Key of the current section
	User    string // signed-in admin; empty on the sign-in pages
	CSRF    string // token for the hidden _csrf field of every form
	Assets  Assets
	Version string
	Flashes []Flash
	// ShowOptional lists the keys of optional navigation items to show
	// (Worldtree once it is configured).
	ShowOptional []string
	// Demo labels every page as demo mode (a built-in fake Discord, never the real one).
	Demo bool
	// Pending is the number of pending proposals, the badge on the
	// navigation's Proposals entry (0: none shown).
	Pending int
	// WriteFailure, when not empty, is the banner shown on every page while
	// the database refuses writes (a full disk, another program's lock).
	WriteFailure string
}

// Assets holds content-hashed URLs of the static files.
type Assets struct {
	CSS  string
	Icon string
	// Live is the script that swaps in the fragments a page's [data-live]
	// SSE address sends; the pages work without it.
	Live string
}

// Flash kinds.
const (
	FlashSuccess = "success"
	FlashError   = "error"
	FlashInfo    = "info"
	FlashWarning = "warning"
)

// Flash is a one-line notice shown above the page content, or beside the
// form it answers.
type Flash struct {
	Kind    string
	Message string
	// Near is the id of the form's card (a fragment: "setup") a page that
	// has it shows the notice in; a page without it shows it on top.
	Near string
}

// NavItem is one entry of the main navigation.
type NavItem struct {
	Key   string
	Label string
	Href  string
	Soon  bool // section not built yet; still navigable, shows what it will hold
	// Optional items appear only when Chrome.ShowOptional lists their key,
	// or on their own page.
	Optional bool
}

// Nav lists the main navigation in order. It is fixed at build time: the
// layout pre-renders it once, at the first page render.
var Nav = []NavItem{
	{Key: "overview", Label: "Overview", Href: "/"},
	{Key: "demo", Label: "Demo", Href: "/demo", Optional: true},
	{Key: "guilds", Label: "Guilds", Href: "/guilds"},
	{Key: "modules", Label: "Modules", Href: "/modules"},
	{Key: "proposals", Label: "Proposals", Href: "/proposals"},
	{Key: "results", Label: "Results", Href: "/results"},
	{Key: "tasks", Label: "Tasks", Href: "/tasks"},
	{Key: "discord", Label: "Discord", Href: "/discord"},
	{Key: "assistant", Label: "Assistant", Href: "/assistant"},
	{Key: "worldtree", Label: "Worldtree", Href: "/worldtree", Optional: true},
	{Key: "audit", Label: "Audit log", Href: "/audit"},
	{Key: "settings", Label: "Settings", Href: "/settings"},
}

// Field describes one labelled form input.
type Field struct {
	ID           string
	Name         string
	Label        string
	Type         string // text, password, search…
	Value        string // never set for passwords
	Autocomplete string
	Hint         string
	Error        string
	Required     bool
	Autofocus    bool
	MinLength    int
	MaxLength    int
	Pattern      string
	// Disabled shows the value but does not submit it (a value the
	// environment sets).
	Disabled bool
}

// Stat is one labelled value on a summary card.
type Stat struct {
	Label string
	Value string
	// Names, when set, show instead of Value (Value then says what an
	// empty list means).
	Names  []Name
	Hint   string
	TestID string
}

// SetupForm is the first-run form's state.
type SetupForm struct {
	Token    string
	Username string
	Errors   form.Errors // by form.Setup* field name
	MinLen   int
	MaxBytes int
}

// SetupBlocked explains why the set-up form cannot be shown.
type SetupBlocked struct {
	Reason string // "missing" or "invalid"
}

// LoginForm is the sign-in form's state.
type LoginForm struct {
	Username string
	Next     string
	Errors   form.Errors // a refused sign-in is form.FieldForm
}

// Overview is the dashboard's data.
type Overview struct {
	Version       string
	Commit        string
	StartedAt     time.Time
	Uptime        string
	DBPath        string
	DBSize        string
	DataDir       string
	LastBackup    string // human text, e.g. "2026-11-29 15:04 UTC (12 MB)"; empty = never
	LastBackupAgo string
	Discord       string // the connection's state in words ("connected", "stopped: …")
	DiscordKind   string // its badge kind ("" : neutral)
	DiscordGuilds int    // guilds the bot is in
	DiscordLinked bool   // the /discord page exists (a bot is configured in this server)
	ModuleCount   int
	Modules       []Module
	// ModuleHealth, when the module host runs, replaces Modules: health at
	// a glance, updated live.
	ModuleHealth *ModuleHealthView
	// Scheduler is the job runner's standing; nil without a scheduler.
	Scheduler *SchedulerView
	// Checklist is the first-run checklist; nil once done or dismissed.
	Checklist     *ChecklistView
	SchemaVersion string
	GoVersion     string
}

// SchedulerView is the overview's job-runner card.
type SchedulerView struct {
	// State is "active", "standby" or "starting"; Detail says what it means.
	State, Detail string
	Running       int
	// Overdue counts jobs due (and not running) for over a second.
	Overdue int
	// Error is set when the overdue count could not be read.
	Error string
}

// Module is a loaded module's name and version.
type Module struct {
	Name    string
	Version string
}

// SessionRow is one active session on the settings page.
type SessionRow struct {
	Current   bool
	Created   string
	LastSeen  string
	IP        string
	Browser   string // short summary such as "Firefox on Linux"
	UserAgent string
}

// SettingsView is the settings page's data.
type SettingsView struct {
	Username       string
	PasswordErrors form.Errors // by form.Password* field name
	MinLen         int
	MaxBytes       int
	Sessions       []SessionRow
	LastBackup     string
	DBSize         string
	Worldtree      WorldtreeSettingsView
	Proposals      ProposalNotifySettingsView
}

// ConfirmView is the confirmation page of a destructive action: what will
// happen in plain words, and a button that posts the same form again with
// form.FieldConfirm=form.ConfirmYes.
type ConfirmView struct {
	Title   string // page title and heading, e.g. "Sign out other sessions?"
	Message string // what will happen, in plain words
	Action  string // the form's URL, posted again on confirmation
	Button  string // the red button, e.g. "Yes, sign out other sessions"
	Cancel  string // where Cancel goes back to
	// Keep holds the form's other fields, re-posted as hidden inputs. Never
	// put a secret here: it is rendered into the page.
	Keep []HiddenField
}

// HiddenField is one name/value pair re-posted by a confirmation page.
type HiddenField struct {
	Name  string
	Value string
}

// Placeholder describes a section that later work fills in.
type Placeholder struct {
	Title    string
	Lead     string
	Features []string
	Hint     string
}

// ErrorView is the content of an error page.
type ErrorView struct {
	Status    int
	Title     string
	Message   string
	RequestID string
	SignedIn  bool
}
