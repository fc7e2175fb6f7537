package tasks

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/internal/chunk"
)

// This file is a task's content: what a run posts (Output, composed by a
// Composer), its validation against the definition (destinations, mention
// lists, Discord's limits), the mentions policy, and its chunking into
// Discord messages for the delivery worker. Pure code: no clock, no
// database, no Discord.
//
// Lengths are counted as Discord counts them: in Unicode code points (its
// API is Python 3 and measures len(str); discord-api-docs#1315), the same
// count app/discord's checkContent uses before sending. A code point is
// never split, so neither is a UTF-8 sequence; Go strings hold no UTF-16
// surrogate pairs, and a lone surrogate cannot be encoded in valid UTF-8.

// Limits of a run's output (the original's) and of a Discord message.
const (
	// MaxPosts is the most posts one run publishes.
	MaxPosts = 10
	// MaxPostContent is the longest content of one post, in code points,
	// before chunking.
	MaxPostContent = 60000
	// MaxChunk is Discord's content limit for one bot message, in code
	// points.
	MaxChunk = chunk.Max
	// MaxPostFiles is the most attachments one post carries (Discord's
	// limit for one message; they all go on the first chunk).
	MaxPostFiles = 10
	// MaxOutputFileBytes bounds the attachments of one run together (the
	// original's 25 MiB); each file is also bound by the guild's upload
	// limit, checked by the delivery worker that knows it.
	MaxOutputFileBytes = 25 << 20
	// MaxLogLine is the longest log row (LogLine), in code points.
	MaxLogLine = 1800

	maxEmbedTitle       = 256
	maxEmbedDescription = 4096
	maxEmbedFields      = 25
	maxEmbedFieldName   = 256
	maxEmbedFieldValue  = 1024
	maxEmbedTotal       = 6000
)

// RunContext is what a Composer knows of the run it composes for.
type RunContext struct {
	// Task is the task's name ({task}).
	Task string
	// Run identifies the run ({run}), e.g. its number or id.
	Run string
	// Due is the occurrence the run is for; {date}, {time} and {weekday}
	// read it in Timezone.
	Due time.Time
	// Timezone is the task's IANA time zone ("" is UTC).
	Timezone string
	// Allowed is what the definition permits: every post is validated
	// against it.
	Allowed Allowed
}

// Allowed is what a task's definition permits its posts: the destination
// channels (or threads) and the users and roles that may be pinged.
type Allowed struct {
	Destinations []uint64
	Users        []uint64
	Roles        []uint64
}

// Composer produces a run's content. TemplateComposer is the
// admin-defined one; a later assistant can fill Output from a model's
// answer behind the same interface.
type Composer interface {
	Compose(ctx context.Context, run RunContext) (Output, error)
}

// Output is what one run publishes: 1..MaxPosts posts.
type Output struct {
	Posts []Post
}

// Post is one message of a run's output, to one destination; Chunk splits
// it into Discord messages.
type Post struct {
	// ChannelID is the destination: one of the definition's destinations.
	ChannelID uint64
	// Content is 1..MaxPostContent code points.
	Content string
	// Embed is optional; it goes on the first chunk.
	Embed *Embed
	// Files are optional; they go on the first chunk.
	Files []Attachment
	// Mentions are the users and roles this post may ping, each among
	// the definition's lists. @everyone and @here never ping.
	Mentions Mentions
}

// Mentions are explicit user and role ids a message may ping.
type Mentions struct {
	Users []uint64
	Roles []uint64
}

// Embed is a post's embed.
type Embed struct {
	Title       string
	Description string
	// URL links the title; http or https only.
	URL string
	// Color is 0xRRGGBB; 0 means none.
	Color  int
	Fields []EmbedField
}

// EmbedField is one field of an Embed.
type EmbedField struct {
	Name   string
	Value  string
	Inline bool
}

// Attachment is a file a post carries: its name and bytes (provided by the
// caller: an upload on the task's definition, or a model's file).
type Attachment struct {
	Name string
	Data []byte
}

// AllowedMentions is the allowed_mentions of every chunk: Parse is always
// empty (so @everyone, @here and any user or role not listed never ping),
// Users and Roles are the post's explicit lists.
type AllowedMentions struct {
	Parse []string
	Users []uint64
	Roles []uint64
}

// Validate checks the output against what the definition allows and
// against Discord's limits; it returns every problem found, joined, each
// naming its post ("tasks: post 2: ...").
func (o Output) Validate(allowed Allowed) error {
	var errs []error
	switch {
	case len(o.Posts) == 0:
		errs = append(errs, errors.New("tasks: the output has no posts"))
	case len(o.Posts) > MaxPosts:
		errs = append(errs, fmt.Errorf("tasks: the output has %d posts, at most %d are published per run", len(o.Posts), MaxPosts))
	}
	total := 0
	for i, p := range o.Posts {
		for _, err := range p.problems(allowed) {
			errs = append(errs, fmt.Errorf("tasks: post %d: %w", i+1, err))
		}
		for _, f := range p.Files {
			total += len(f.Data)
		}
	}
	if total > MaxOutputFileBytes {
		errs = append(errs, fmt.Errorf("tasks: the attachments total %d bytes, more than the %d bytes (25 MiB) of one run", total, MaxOutputFileBytes))
	}
	return errors.Join(errs...)
}

func (p Post) problems(allowed Allowed) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains(allowed.Destinations, p.ChannelID) {
		add("channel %d is not one of the task's destinations", p.ChannelID)
	}
	switch n := runes(p.Content); {
	case !utf8.ValidString(p.Content):
		add("the content is not valid UTF-8 text")
	case strings.TrimSpace(p.Content) == "":
		add("the content is empty; a post needs 1 to %d characters", MaxPostContent)
	case n > MaxPostContent:
		add("the content is %d characters, more than the %d a post may have", n, MaxPostContent)
	}
	for _, u := range p.Mentions.Users {
		if !slices.Contains(allowed.Users, u) {
			add("user %d may not be mentioned: not in the task's mention list", u)
		}
	}
	for _, r := range p.Mentions.Roles {
		if !slices.Contains(allowed.Roles, r) {
			add("role %d may not be mentioned: not in the task's mention list", r)
		}
	}
	if len(p.Files) > MaxPostFiles {
		add("%d attachments, at most %d per post", len(p.Files), MaxPostFiles)
	}
	for j, f := range p.Files {
		if f.Name == "" || strings.ContainsAny(f.Name, "/\\\x00") || strings.TrimSpace(f.Name) != f.Name {
			add("attachment %d has no valid file name (%q)", j+1, f.Name)
		}
	}
	if p.Embed != nil {
		errs = append(errs, p.Embed.problems()...)
	}
	return errs
}

func (e *Embed) problems() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	total := runes(e.Title) + runes(e.Description)
	if n := runes(e.Title); n > maxEmbedTitle {
		add("the embed title is %d characters, more than Discord's %d", n, maxEmbedTitle)
	}
	if n := runes(e.Description); n > maxEmbedDescription {
		add("the embed description is %d characters, more than Discord's %d", n, maxEmbedDescription)
	}
	if e.URL != "" {
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("the embed URL %q is not an http or https address", e.URL)
		}
	}
	if e.Color < 0 || e.Color > 0xFFFFFF {
		add("the embed colour %d is not a colour 0x000000 to 0xFFFFFF", e.Color)
	}
	if len(e.Fields) > maxEmbedFields {
		add("the embed has %d fields, at most %d", len(e.Fields), maxEmbedFields)
	}
	for i, f := range e.Fields {
		if strings.TrimSpace(f.Name) == "" || strings.TrimSpace(f.Value) == "" {
			add("embed field %d needs a name and a value", i+1)
		}
		if runes(f.Name) > maxEmbedFieldName || runes(f.Value) > maxEmbedFieldValue {
			add("embed field %d: names are at most %d characters and values %d", i+1, maxEmbedFieldName, maxEmbedFieldValue)
		}
		total += runes(f.Name) + runes(f.Value)
	}
	if e.Title == "" && e.Description == "" && len(e.Fields) == 0 {
		add("the embed is empty: give it a title, a description or a field")
	}
	if total > maxEmbedTotal {
		add("the embed's text totals %d characters, more than Discord's %d", total, maxEmbedTotal)
	}
	return errs
}

// AllowedMentions is the post's mentions policy: parse none, the explicit
// users and roles only.
func (p Post) AllowedMentions() AllowedMentions {
	return AllowedMentions{
		Parse: []string{},
		Users: slices.Clone(p.Mentions.Users),
		Roles: slices.Clone(p.Mentions.Roles),
	}
}

// zwj is the zero-width joiner Neutralize puts after the @ of @everyone and
// @here, as Discord bots commonly do: the text reads the same, and Discord
// no longer sees the mention even if allowed_mentions were lost.
const zwj = "\u200d"

var neutralizer = strings.NewReplacer("@everyone", "@"+zwj+"everyone", "@here", "@"+zwj+"here")

// Neutralize makes the literal "@everyone" and "@here" in s inert by
// putting a zero-width joiner (U+200D) after the @. Discord parses only
// these lowercase forms; allowed_mentions with parse none (every chunk's)
// is the first guard, this the second.
func Neutralize(s string) string { return neutralizer.Replace(s) }

// TemplateComposer is the admin-defined content of a task: one post to
// every destination of the definition, its text from Template, an
// optional Embed, the Files given, pinging every user and role of the
// definition's mention lists.
//
// Placeholders, read in the run's time zone at its due time, in the
// template and in every text of the embed (title, description, URL, field
// names and values):
//
//	{date}    2026-12-24 (year-month-day)
//	{time}    18:00 (24-hour local time)
//	{weekday} Thursday (English)
//	{task}    the task's name
//	{run}     the run's identifier
//
// Anything else in braces, such as {x}, is left as it is. Values are not
// expanded again: a task named "{date}" stays "{date}".
type TemplateComposer struct {
	Template string
	Embed    *Embed
	Files    []Attachment
}

var _ Composer = TemplateComposer{}

// Compose renders the template for run and validates the result against
// run.Allowed.
func (c TemplateComposer) Compose(ctx context.Context, run RunContext) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, fmt.Errorf("tasks: compose: %w", err)
	}
	r, err := run.replacer()
	if err != nil {
		return Output{}, err
	}
	var embed *Embed
	if c.Embed != nil {
		e := *c.Embed
		e.Title, e.Description, e.URL = r.Replace(e.Title), r.Replace(e.Description), r.Replace(e.URL)
		e.Fields = make([]EmbedField, len(c.Embed.Fields))
		for i, f := range c.Embed.Fields {
			e.Fields[i] = EmbedField{Name: r.Replace(f.Name), Value: r.Replace(f.Value), Inline: f.Inline}
		}
		if len(e.Fields) == 0 {
			e.Fields = nil
		}
		embed = &e
	}
	out := Output{}
	content := r.Replace(c.Template)
	for _, ch := range run.Allowed.Destinations {
		p := Post{
			ChannelID: ch,
			Content:   content,
			Files:     c.Files,
			Mentions:  Mentions{Users: slices.Clone(run.Allowed.Users), Roles: slices.Clone(run.Allowed.Roles)},
		}
		if embed != nil {
			e := *embed
			e.Fields = slices.Clone(embed.Fields)
			p.Embed = &e
		}
		out.Posts = append(out.Posts, p)
	}
	if err := out.Validate(run.Allowed); err != nil {
		return Output{}, err // each line already says "tasks: post N: ..."
	}
	return out, nil
}

func (run RunContext) replacer() (*strings.Replacer, error) {
	loc := time.UTC
	if run.Timezone != "" {
		l, err := time.LoadLocation(run.Timezone)
		if err != nil || run.Timezone == "Local" {
			return nil, fmt.Errorf("tasks: compose: unknown time zone %q", run.Timezone)
		}
		loc = l
	}
	t := run.Due.In(loc)
	return strings.NewReplacer(
		"{date}", t.Format("2006-01-02"),
		"{time}", t.Format("15:04"),
		"{weekday}", t.Weekday().String(),
		"{task}", run.Task,
		"{run}", run.Run,
	), nil
}

// PostChunk is one Discord message of a post, delivered in Index order.
// (The type is not named Chunk: that is the function that makes them.)
type PostChunk struct {
	ChannelID uint64
	// Index is 0-based; Total is the number of chunks of the post.
	Index, Total int
	// Content is at most MaxChunk code points.
	Content string
	// Embed and Files are set on the first chunk only.
	Embed *Embed
	Files []Attachment
	// AllowedMentions is the post's, on every chunk.
	AllowedMentions AllowedMentions

	// reopen and closed are the fence repairs Chunk added at the start
	// and the end of Content (tests strip them to compare with the post).
	reopen, closed string
}

// Needs is what posting c needs beyond viewing and sending: files and
// embeds ride on a post's first chunk only.
func (c PostChunk) Needs() Needs { return needsOf(len(c.Files) > 0, c.Embed != nil) }

// Chunk splits a post into Discord messages of at most MaxChunk code
// points, after Neutralize. It cuts at the last paragraph break (a blank
// line) in the second half of the room, else the last line break there,
// else the last space, else at the limit, and never inside a code point
// or a ``` delimiter. A cut inside a ``` code block closes it at the end
// of the chunk and reopens it, with its language, at the start of the
// next. A chunk of only whitespace (Discord refuses it, and trims the
// whitespace around a message anyway) is left out. Files and the embed go
// on the first chunk; every chunk carries the post's allowed mentions and
// its index and total.
func Chunk(post Post) []PostChunk {
	s := Neutralize(post.Content)
	var chunks []PostChunk
	pieces := chunk.Split(s, MaxChunk)
	for _, c := range pieces {
		if len(pieces) > 1 && c.Reopen == "" && strings.TrimSpace(c.Body) == "" {
			continue // Discord refuses a message of only whitespace
		}
		chunks = append(chunks, PostChunk{
			ChannelID:       post.ChannelID,
			Content:         c.Text(),
			AllowedMentions: post.AllowedMentions(),
			reopen:          c.Reopen,
			closed:          c.Closed,
		})
	}
	if len(chunks) == 0 { // pieces were all whitespace: keep the first
		chunks = append(chunks, PostChunk{ChannelID: post.ChannelID, Content: pieces[0].Body, AllowedMentions: post.AllowedMentions()})
	}
	for i := range chunks {
		chunks[i].Index, chunks[i].Total = i, len(chunks)
	}
	chunks[0].Embed = post.Embed
	chunks[0].Files = post.Files
	return chunks
}

// LogLine is a task's log row: "Task <name>: <outcome>. <detail>" (no
// trailing space without a detail), clipped to MaxLogLine code points.
func LogLine(task, outcome, detail string) string {
	s := fmt.Sprintf("Task %s: %s.", task, outcome)
	if detail != "" {
		s += " " + detail
	}
	return chunk.Clip(s, MaxLogLine)
}

func runes(s string) int { return utf8.RuneCountInString(s) }
