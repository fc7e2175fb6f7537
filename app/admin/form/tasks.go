package form

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/tasks"
)

// Field names of the /tasks forms besides the definition's and the
// schedule's own (tasks.FieldName, tasks.FieldKind, ...), which the form
// uses as they are so that a *tasks.DefinitionError's fields land beside
// the inputs they name.
const (
	// TaskEmbedTitle, TaskEmbedDescription and TaskEmbedColor are the
	// optional embed's inputs (their errors: tasks.FieldEmbed).
	TaskEmbedTitle       = "embed_title"
	TaskEmbedDescription = "embed_description"
	TaskEmbedColor       = "embed_color"
	// TaskRemoveFile names an attachment of the current revision the edit
	// drops (a checkbox per file).
	TaskRemoveFile = "remove_attachment"
	// TaskHeldFile names a file a refused save kept on the server (its
	// token; one hidden input per file), and TaskRemoveHeld is the button
	// that drops one (its token) and shows the form again without saving.
	TaskHeldFile   = "held_attachment"
	TaskRemoveHeld = "remove_held"
	// TaskPaused is the pause/resume form's state asked for: "true" or
	// "false".
	TaskPaused = "paused"
	// TaskChannel is the test preview's channel ("" or 0: render only).
	TaskChannel = "channel"
	// TaskGuildFilter and TaskAfter are GET /tasks' guild filter and
	// keyset cursor.
	TaskGuildFilter = "guild"
	TaskAfter       = "after"
)

// MaxUploadMemory is how much of a task form's files is held in memory
// while it is read; the rest is spooled to temporary files (which net/http
// removes once the request is answered).
const MaxUploadMemory = 8 << 20

// Messages of refused /tasks forms.
const (
	MsgTaskUpload  = "The attachments could not be read: upload them again."
	MsgTaskGuild   = "Enter the server's id (digits)."
	MsgTaskPaused  = "Choose whether the task is paused."
	MsgTaskChannel = "Enter a channel id (digits), or leave it empty to only render the preview."
	MsgTaskColor   = "The embed colour must be six hex digits such as #5865F2."
)

// TaskForm is the create and edit form of a task (POST /tasks, POST
// /tasks/{id}/edit), as typed: the page shows it back unchanged when it is
// refused, so nothing the operator typed is lost.
type TaskForm struct {
	Guild, Name, Owner, Destinations, Content string
	EmbedTitle, EmbedDescription, EmbedColor  string
	MentionUsers, MentionRoles, LogChannel    string
	// Schedule is the schedule's fields (tasks.FieldKind, ...), anchor
	// included when the edit form carries it.
	Schedule map[string]string
	// RemoveFiles are the names of the current revision's files to drop.
	RemoveFiles []string
	// Uploads are the files uploaded with this POST.
	Uploads []tasks.Attachment
	// Held are the tokens of the files an earlier refused save kept
	// (TaskHeldFile); RemoveHeld is the one to drop ("" none): the POST
	// is then no save. HeldFiles are the held files the handler found for
	// Held, attached between the kept current files and Uploads.
	Held       []string
	RemoveHeld string
	HeldFiles  []tasks.Attachment
}

// scheduleFields are the schedule inputs the form reads.
var scheduleFields = []string{tasks.FieldKind, tasks.FieldAt, tasks.FieldEvery, tasks.FieldTime, tasks.FieldWeekday,
	tasks.FieldDay, tasks.FieldTimezone, tasks.FieldLate, tasks.FieldAnchor}

// ParseTaskForm reads the form from r (url-encoded or multipart; the body
// is bounded by the admin's middleware). An error means the uploads could
// not be read (MsgTaskUpload); the typed fields are still returned.
func ParseTaskForm(r *http.Request) (TaskForm, error) {
	var upErr error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(MaxUploadMemory); err != nil && !errors.Is(err, http.ErrNotMultipart) {
			upErr = fmt.Errorf("form: read the attachments: %w", err)
		}
	}
	f := TaskForm{
		Guild: pickedID(r, tasks.FieldGuild), Name: value(r, tasks.FieldName),
		Owner: pickedID(r, tasks.FieldOwner), Destinations: pickedIDs(r, tasks.FieldDestinations),
		Content: value(r, tasks.FieldContent), EmbedTitle: value(r, TaskEmbedTitle),
		EmbedDescription: value(r, TaskEmbedDescription), EmbedColor: strings.TrimSpace(value(r, TaskEmbedColor)),
		MentionUsers: pickedIDs(r, tasks.FieldMentionUsers), MentionRoles: pickedIDs(r, tasks.FieldMentionRoles),
		LogChannel: pickedID(r, tasks.FieldLogChannel), Schedule: map[string]string{},
	}
	for _, k := range scheduleFields {
		if v := strings.TrimSpace(value(r, k)); v != "" {
			f.Schedule[k] = v
		}
	}
	if r.PostForm != nil {
		f.RemoveFiles = r.PostForm[TaskRemoveFile]
		for _, tok := range r.PostForm[TaskHeldFile] {
			if tok = strings.TrimSpace(tok); tok != "" && len(tok) <= 64 && !slices.Contains(f.Held, tok) && len(f.Held) < tasks.MaxAttachments {
				f.Held = append(f.Held, tok)
			}
		}
		f.RemoveHeld = clipRunes(strings.TrimSpace(r.PostForm.Get(TaskRemoveHeld)), 64)
	}
	if upErr == nil && r.MultipartForm != nil {
		for _, fh := range r.MultipartForm.File[tasks.FieldAttachments] {
			if fh.Filename == "" && fh.Size == 0 {
				continue // the empty file input
			}
			data, err := readUpload(fh)
			if err != nil {
				upErr = err
				break
			}
			f.Uploads = append(f.Uploads, tasks.Attachment{Name: fh.Filename, Data: data})
		}
	}
	return f, upErr
}

func readUpload(fh *multipart.FileHeader) ([]byte, error) {
	file, err := fh.Open()
	if err != nil {
		return nil, fmt.Errorf("form: open an attachment: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, fmt.Errorf("form: read an attachment: %w", err)
	}
	return data, nil
}

// TaskFormOf is the form of a stored definition (the edit form's prefill).
func TaskFormOf(def tasks.Definition) TaskForm {
	f := TaskForm{
		Guild: strconv.FormatUint(def.GuildID, 10), Name: def.Name, Owner: idText(def.OwnerID),
		Destinations: idsText(def.Destinations), Content: def.Template,
		MentionUsers: idsText(def.MentionUsers), MentionRoles: idsText(def.MentionRoles),
		LogChannel: idText(def.LogChannelID), Schedule: map[string]string{},
	}
	for k, v := range def.Schedule {
		f.Schedule[k] = v
	}
	if def.Embed != nil {
		f.EmbedTitle, f.EmbedDescription = def.Embed.Title, def.Embed.Description
		if def.Embed.Color != 0 {
			f.EmbedColor = fmt.Sprintf("#%06X", def.Embed.Color)
		}
	}
	return f
}

// Definition is the form as a definition, with files the kept ones of
// current (those not in RemoveFiles), then HeldFiles, then the uploads. Errors are
// the values that are not even ids or a colour (keyed by the definition's
// field names); the service checks the rest.
func (f TaskForm) Definition(current []tasks.Attachment) (tasks.Definition, Errors) {
	var e Errors
	def := tasks.Definition{Name: f.Name, Template: f.Content, Schedule: f.Schedule}
	if f.Guild != "" {
		g, err := parseTaskID(f.Guild)
		if err != nil {
			e.Add(tasks.FieldGuild, MsgTaskGuild)
		}
		def.GuildID = g
	}
	if f.Owner != "" {
		o, err := parseTaskID(f.Owner)
		if err != nil {
			e.Add(tasks.FieldOwner, "The owner must be a Discord user id (digits).")
		}
		def.OwnerID = o
	}
	var err error
	if def.Destinations, err = parseIDs(f.Destinations); err != nil {
		e.Add(tasks.FieldDestinations, "Destinations: "+err.Error())
	}
	if def.MentionUsers, err = parseIDs(f.MentionUsers); err != nil {
		e.Add(tasks.FieldMentionUsers, "Users to mention: "+err.Error())
	}
	if def.MentionRoles, err = parseIDs(f.MentionRoles); err != nil {
		e.Add(tasks.FieldMentionRoles, "Roles to mention: "+err.Error())
	}
	if f.LogChannel != "" {
		if def.LogChannelID, err = parseTaskID(f.LogChannel); err != nil {
			e.Add(tasks.FieldLogChannel, "The log channel must be a channel id (digits).")
		}
	}
	if f.EmbedTitle != "" || f.EmbedDescription != "" || f.EmbedColor != "" {
		em := &tasks.Embed{Title: f.EmbedTitle, Description: f.EmbedDescription}
		if f.EmbedColor != "" {
			c, err := strconv.ParseUint(strings.TrimPrefix(f.EmbedColor, "#"), 16, 32)
			if err != nil || len(strings.TrimPrefix(f.EmbedColor, "#")) != 6 {
				e.Add(tasks.FieldEmbed, MsgTaskColor)
			}
			em.Color = int(c)
		}
		def.Embed = em
	}
	for _, a := range current {
		if !slices.Contains(f.RemoveFiles, a.Name) {
			def.Files = append(def.Files, a)
		}
	}
	def.Files = append(def.Files, f.HeldFiles...)
	def.Files = append(def.Files, f.Uploads...)
	return def, e
}

// TaskPause is the pause/resume form (POST /tasks/{id}/pause).
type TaskPause struct{ Paused, Valid bool }

// ParseTaskPause reads the form.
func ParseTaskPause(r *http.Request) TaskPause {
	switch value(r, TaskPaused) {
	case "true":
		return TaskPause{Paused: true, Valid: true}
	case "false":
		return TaskPause{Valid: true}
	}
	return TaskPause{}
}

// Validate refuses a state that is neither.
func (f TaskPause) Validate() Errors {
	var e Errors
	if !f.Valid {
		e.Add(TaskPaused, MsgTaskPaused)
	}
	return e
}

// TaskPreview is the test preview form (POST /tasks/{id}/preview): render
// only (Channel 0) or post to a channel.
type TaskPreview struct {
	Raw     string
	Channel uint64
}

// ParseTaskPreview reads the form.
func ParseTaskPreview(r *http.Request) TaskPreview {
	return TaskPreview{Raw: strings.TrimSpace(value(r, TaskChannel))}
}

// Validate parses the channel id.
func (f *TaskPreview) Validate() Errors {
	var e Errors
	if f.Raw == "" || f.Raw == "0" {
		return e
	}
	id, err := parseTaskID(f.Raw)
	if err != nil {
		e.Add(TaskChannel, MsgTaskChannel)
	}
	f.Channel = id
	return e
}

// TaskFilter is GET /tasks' guild filter and cursor.
type TaskFilter struct {
	Guild   string
	GuildID uint64
	After   string
}

// ParseTaskFilter reads the filter from r's query.
func ParseTaskFilter(r *http.Request) TaskFilter {
	q := r.URL.Query()
	return TaskFilter{Guild: clipRunes(strings.TrimSpace(q.Get(TaskGuildFilter)), 40), After: clipRunes(strings.TrimSpace(q.Get(TaskAfter)), 200)}
}

// Validate parses the guild id.
func (f *TaskFilter) Validate() Errors {
	var e Errors
	if f.Guild != "" {
		id, err := parseTaskID(f.Guild)
		if err != nil {
			e.Add(TaskGuildFilter, MsgTaskGuild)
		}
		f.GuildID = id
	}
	return e
}

// parseTaskID reads one Discord id (digits, > 0, within SQLite's INTEGER).
func parseTaskID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 || id > 1<<63-1 {
		return 0, fmt.Errorf("%q is not a Discord id", clipRunes(s, 40))
	}
	return id, nil
}

// parseIDs reads ids separated by commas, spaces or new lines.
func parseIDs(s string) ([]uint64, error) {
	var ids []uint64
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		id, err := parseTaskID(p)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func idText(id uint64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatUint(id, 10)
}

func idsText(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ", ")
}
