package templates

import "github.com/kimiapp/kimi/app/admin/form"

// TasksListView is GET /tasks: every task (or one guild's), newest first,
// a page at a time.
type TasksListView struct {
	// Guild is the guild filter as typed ("" every guild); GuildError
	// says why it was refused.
	Guild, GuildError string
	Guilds            []string // the known guilds' ids (the filter's suggestions)
	NewURL            string
	// Problem is the runner's start-up problem ("" none).
	Problem           string
	Rows              []TaskRow
	FirstURL, NextURL string
}

// TaskRow is one task's summary.
type TaskRow struct {
	ID, URL                 string
	Name                    string
	Guild                   string
	GuildName               Name
	State, StateKind        string
	Schedule                string // Describe of its schedule
	NextDue, NextDueExact   string // "" none left (or paused)
	Paused                  bool   // no run until resumed: the next run reads "paused"
	LastRun, LastRunKind    string // the newest run's status ("" none yet)
	LastRunAt, LastRunExact string
}

// TaskFormView is the create (/tasks/new) and edit (/tasks/{id}/edit)
// form: the operator's input, the field errors and the guild policy's
// hints.
type TaskFormView struct {
	Title, Lead string
	Action      string // where it posts
	Cancel      string
	Editing     bool // the guild is fixed
	Form        form.TaskForm
	Errors      form.Errors
	// FormError is a message for the whole form (ErrDisabled, ...).
	FormError string
	Guilds    []string // the active guilds' ids (suggestions)
	// Guild, Owner and Destinations are the form's pickers (Guild unused
	// when Editing).
	Pick TaskPickers
	// PolicyDestinations lists the guild policy's destination channels
	// ("" any channel the bot and the owner can post in).
	PolicyDestinations string
	PolicyTimezone     string
	PolicyEnabled      bool
	PolicyKnown        bool // a guild was chosen, so the policy is its
	// Existing are the current revision's attachments (edit).
	Existing []TaskFile
	// Held are the files a refused save kept on the server: attached
	// again by the next save unless removed.
	Held     []TaskHeldFile
	Kinds    []string
	Weekdays []string
}

// TaskPickers are the task form's guild, owner and destination fields.
type TaskPickers struct {
	Guild, Owner, Destinations Picker
	// LogChannel, MentionUsers and MentionRoles are the log channel and
	// the members and roles a post may mention.
	LogChannel, MentionUsers, MentionRoles Picker
}

// TaskFile is one of a revision's attachments.
type TaskFile struct {
	Name string
	Size string
}

// TaskHeldFile is a file a refused save kept: its token (the form's
// hidden input and the remove button's value), name and size.
type TaskHeldFile struct {
	Token, Name, Size string
}

// TaskShowView is GET /tasks/{id}.
type TaskShowView struct {
	Task       TaskRow
	Owner      string
	Revision   string
	Summary    []Stat
	Content    string
	Files      []TaskFile
	ActionBase string
	Live       string
	// Preview is a render-only preview's chunks (nil: none asked).
	Preview      []TaskChunk
	PreviewError string
	Detail       TaskDetail
	// Mentions names the guild's members, channels and roles in the
	// template and the preview (nil: ids shown as unknown).
	Mentions Mentions
}

// TaskChunk is one Discord message of a preview.
type TaskChunk struct {
	Label   string // "#123 · 1/2"
	Content string
	Embed   string // the embed's title and description ("" none)
}

// TaskDetail is a task page's live region: its state and run history.
type TaskDetail struct {
	ActionBase       string
	State, StateKind string
	Paused           bool
	NextDue          string
	NextDueExact     string
	Runs             []TaskRunRow
}

// TaskRunRow is one run of the history, with its posts and notifications.
type TaskRunRow struct {
	ID, Status, Kind string
	Due, DueExact    string
	Detail           string
	Skipped          string // "" none
	Posts            []TaskPostRow
	Notifications    []TaskNoteRow
	NotesError       string
}

// TaskPostRow is one post row of a run.
type TaskPostRow struct {
	Seq, Chunk, Channel string
	ChannelName         Name
	Log                 bool
	Status, Kind        string
	Attempts, Detail    string
	JumpURL             string // a sent message's link ("" otherwise)
	RetryURL            string // an uncertain row's retry action ("" otherwise)
}

// TaskNoteRow is one subscription's notification of a run.
type TaskNoteRow struct {
	Sub, Status, Kind string
	Attempts, Detail  string
}
