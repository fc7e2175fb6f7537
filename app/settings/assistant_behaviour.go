package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kimiapp/kimi/app/store"
)

// Keys of the assistant's behaviour settings (its name, who it answers in
// direct messages, its persona, the limits of a turn) in the settings
// table.
const (
	SettingAssistantName         = "assistant.name"
	SettingAssistantDMMode       = "assistant.dm_mode"
	SettingAssistantDMUserIDs    = "assistant.dm_user_ids"
	SettingAssistantPersona      = "assistant.persona"
	SettingAssistantTurnDeadline = "assistant.turn_deadline_seconds"
	SettingAssistantIterationCap = "assistant.iteration_cap"
)

// AuditActionAssistantBehaviour is the audit action of a save of the
// behaviour settings; its detail names what changed (the persona only as
// changed, never its text).
const AuditActionAssistantBehaviour = "assistant.behaviour"

// Field names of the behaviour settings (Error.Fields keys and the form's
// field names).
const (
	FieldAssistantName         = "assistant_name"
	FieldAssistantDMMode       = "dm_mode"
	FieldAssistantDMUserIDs    = "dm_user_ids"
	FieldAssistantPersona      = "persona"
	FieldAssistantTurnDeadline = "turn_deadline_seconds"
	FieldAssistantIterationCap = "iteration_cap"
)

// DMMode says whom the assistant answers in direct messages.
type DMMode string

// The DMMode choices; DMOff (the original's default) drops every DM
// silently.
const (
	DMOff   DMMode = "off"
	DMOwner DMMode = "owner"
	DMUsers DMMode = "users"
)

// PersonaNamePlaceholder is replaced by the assistant's name in the
// persona (the configured name, else the bot's).
const PersonaNamePlaceholder = "{name}"

// DefaultPersona is the persona when none is set. The original's default
// (config/persona.md, <bot_name> substituted) is not in the reference, so
// this is Kimi's own wording.
const DefaultPersona = "You are {name}, a helpful assistant in this Discord server. Answer clearly and briefly, " +
	"use the tools you are given when they help, and say so when you cannot do something."

// Bounds and defaults of the behaviour settings.
const (
	DefaultTurnDeadline = 180 * time.Second
	MinTurnDeadline     = 10 * time.Second
	MaxTurnDeadline     = 30 * time.Minute
	DefaultIterationCap = 12
	MinIterationCap     = 1
	MaxIterationCap     = 200
	MaxPersonaBytes     = 8000
	MaxDMUserIDs        = 512
	MaxNameRunes        = 32
)

// AssistantBehaviour is the stored behaviour configuration.
type AssistantBehaviour struct {
	// Name is the configured assistant name ("": the bot's own names
	// only): a text invocation answers to it besides the bot user's names,
	// and the persona is written with it.
	Name   string
	DMMode DMMode
	// DMUserIDs are the users answered in DMs when DMMode is DMUsers.
	DMUserIDs []uint64
	// Persona is the operator's persona text ("" : DefaultPersona).
	Persona string
	// TurnDeadline bounds a whole turn; IterationCap its model calls.
	TurnDeadline time.Duration
	IterationCap int
}

// DefaultAssistantBehaviour is what an empty store gives: DMs off, the
// default persona, 180 s and 12 iterations.
func DefaultAssistantBehaviour() AssistantBehaviour {
	return AssistantBehaviour{DMMode: DMOff, TurnDeadline: DefaultTurnDeadline, IterationCap: DefaultIterationCap}
}

// NameOr is the configured name, else botName.
func (b AssistantBehaviour) NameOr(botName string) string {
	if b.Name != "" {
		return b.Name
	}
	return botName
}

// PersonaFor is the persona with every PersonaNamePlaceholder replaced by
// the configured name, else by botName.
func (b AssistantBehaviour) PersonaFor(botName string) string {
	p := b.Persona
	if p == "" {
		p = DefaultPersona
	}
	return strings.ReplaceAll(p, PersonaNamePlaceholder, b.NameOr(botName))
}

// AllowsDM reports whether a direct message from userID is answered:
// never when off, the owner only (an unset owner, 0, matches nobody), or
// a listed user.
func (b AssistantBehaviour) AllowsDM(userID, ownerID uint64) bool {
	switch b.DMMode {
	case DMOwner:
		return ownerID != 0 && userID == ownerID
	case DMUsers:
		return slices.Contains(b.DMUserIDs, userID)
	}
	return false
}

// WantsDMs reports whether the gateway should carry DM events (the
// non-privileged DM intent), i.e. some DM can be answered.
func (b AssistantBehaviour) WantsDMs() bool {
	return b.DMMode == DMOwner || (b.DMMode == DMUsers && len(b.DMUserIDs) > 0)
}

// AssistantBehaviourUpdate is a submitted change: the name as typed
// (trimmed; "" for the bot's own names), the user ids as typed (one per
// line, commas and spaces separate too), the deadline in seconds.
type AssistantBehaviourUpdate struct {
	Name         string
	DMMode       DMMode
	DMUserIDs    string
	Persona      string
	TurnDeadline time.Duration
	IterationCap int
}

// Validate checks u as SaveAssistantBehaviour does, without storing it:
// nil, or a *Error naming each refused field.
func (u AssistantBehaviourUpdate) Validate() error {
	_, err := u.parse()
	return err
}

// parse validates u and returns the settings it describes, or a *Error.
func (u AssistantBehaviourUpdate) parse() (AssistantBehaviour, error) {
	f := map[string]string{}
	b := AssistantBehaviour{DMMode: u.DMMode, TurnDeadline: u.TurnDeadline, IterationCap: u.IterationCap,
		Name: strings.TrimSpace(u.Name), Persona: strings.TrimSpace(strings.ReplaceAll(u.Persona, "\r\n", "\n"))}
	if msg := nameProblem(b.Name); msg != "" {
		f[FieldAssistantName] = msg
	}
	if b.DMMode == "" {
		b.DMMode = DMOff
	}
	switch b.DMMode {
	case DMOff, DMOwner, DMUsers:
	default:
		f[FieldAssistantDMMode] = "Choose off, the owner only, or these users."
	}
	for _, s := range strings.FieldsFunc(u.DMUserIDs, func(r rune) bool { return r == '\n' || r == '\r' || r == ',' || r == ' ' || r == '\t' }) {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil || id == 0 || s[0] == '+' {
			f[FieldAssistantDMUserIDs] = fmt.Sprintf("%q is not a Discord user id: use 1 to 20 digits, greater than 0, one per line.", s)
			break
		}
		if !slices.Contains(b.DMUserIDs, id) {
			b.DMUserIDs = append(b.DMUserIDs, id)
		}
	}
	if _, bad := f[FieldAssistantDMUserIDs]; !bad {
		switch {
		case len(b.DMUserIDs) > MaxDMUserIDs:
			f[FieldAssistantDMUserIDs] = fmt.Sprintf("List at most %d users.", MaxDMUserIDs)
		case b.DMMode == DMUsers && len(b.DMUserIDs) == 0:
			f[FieldAssistantDMUserIDs] = "List the Discord user ids the assistant answers in direct messages, one per line."
		}
	}
	slices.Sort(b.DMUserIDs)
	switch {
	case len(b.Persona) > MaxPersonaBytes:
		f[FieldAssistantPersona] = fmt.Sprintf("The persona is longer than %d bytes.", MaxPersonaBytes)
	case !utf8.ValidString(b.Persona) || strings.ContainsRune(b.Persona, 0):
		f[FieldAssistantPersona] = "The persona must be plain UTF-8 text."
	}
	if b.Persona == DefaultPersona {
		b.Persona = ""
	}
	if u.TurnDeadline < MinTurnDeadline || u.TurnDeadline > MaxTurnDeadline || u.TurnDeadline%time.Second != 0 {
		f[FieldAssistantTurnDeadline] = fmt.Sprintf("Enter a turn deadline in whole seconds, from %d to %d (default %d).",
			int(MinTurnDeadline.Seconds()), int(MaxTurnDeadline.Seconds()), int(DefaultTurnDeadline.Seconds()))
	}
	if u.IterationCap < MinIterationCap || u.IterationCap > MaxIterationCap {
		f[FieldAssistantIterationCap] = fmt.Sprintf("Enter the most model calls a turn may make, from %d to %d (default %d).",
			MinIterationCap, MaxIterationCap, DefaultIterationCap)
	}
	if len(f) > 0 {
		return AssistantBehaviour{}, &Error{Fields: f}
	}
	return b, nil
}

// nameProblem is why name cannot be the assistant's name ("" when it can:
// empty, or 1 to MaxNameRunes characters of UTF-8 text on one line,
// without control or invisible format characters).
func nameProblem(name string) string {
	switch {
	case name == "":
		return ""
	case !utf8.ValidString(name):
		return "The name must be plain UTF-8 text."
	case utf8.RuneCountInString(name) > MaxNameRunes:
		return fmt.Sprintf("Use at most %d characters for the name.", MaxNameRunes)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
		return "The name must be one line without control or invisible characters."
	}
	return ""
}

var behaviourKeys = []string{SettingAssistantName, SettingAssistantDMMode, SettingAssistantDMUserIDs, SettingAssistantPersona,
	SettingAssistantTurnDeadline, SettingAssistantIterationCap}

// LoadAssistantBehaviour reads the stored settings over
// DefaultAssistantBehaviour; a stored value that does not parse or is out
// of bounds leaves the default.
func LoadAssistantBehaviour(ctx context.Context, st Store) (AssistantBehaviour, error) {
	b, err := readBehaviour(ctx, st.Reader())
	if err != nil {
		return AssistantBehaviour{}, fmt.Errorf("settings: load assistant behaviour: %w", err)
	}
	return b, nil
}

func readBehaviour(ctx context.Context, q querier) (AssistantBehaviour, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM kimi_settings WHERE key IN (?, ?, ?, ?, ?, ?)`,
		behaviourKeys[0], behaviourKeys[1], behaviourKeys[2], behaviourKeys[3], behaviourKeys[4], behaviourKeys[5])
	if err != nil {
		return AssistantBehaviour{}, err
	}
	defer rows.Close()
	b := DefaultAssistantBehaviour()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return AssistantBehaviour{}, err
		}
		n, nerr := strconv.Atoi(v)
		switch k {
		case SettingAssistantName:
			if v == strings.TrimSpace(v) && nameProblem(v) == "" {
				b.Name = v
			}
		case SettingAssistantDMMode:
			if m := DMMode(v); m == DMOwner || m == DMUsers {
				b.DMMode = m
			}
		case SettingAssistantDMUserIDs:
			for _, s := range strings.Split(v, ",") {
				if id, err := strconv.ParseUint(s, 10, 64); err == nil && id > 0 {
					b.DMUserIDs = append(b.DMUserIDs, id)
				}
			}
		case SettingAssistantPersona:
			b.Persona = v
		case SettingAssistantTurnDeadline:
			if d := time.Duration(n) * time.Second; nerr == nil && d >= MinTurnDeadline && d <= MaxTurnDeadline {
				b.TurnDeadline = d
			}
		case SettingAssistantIterationCap:
			if nerr == nil && n >= MinIterationCap && n <= MaxIterationCap {
				b.IterationCap = n
			}
		}
	}
	if b.DMMode == DMUsers && len(b.DMUserIDs) == 0 {
		b.DMMode = DMOff // fail closed
	}
	return b, rows.Err()
}

// SaveAssistantBehaviour validates u and stores it with an
// AuditActionAssistantBehaviour row in one write transaction. Invalid
// input returns a *Error and changes nothing.
func SaveAssistantBehaviour(ctx context.Context, st Store, u AssistantBehaviourUpdate, who Actor) (AssistantBehaviour, error) {
	next, err := u.parse()
	if err != nil {
		return AssistantBehaviour{}, err
	}
	err = st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readBehaviour(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		ids := make([]string, len(next.DMUserIDs))
		for i, id := range next.DMUserIDs {
			ids[i] = strconv.FormatUint(id, 10)
		}
		if err := writeSettingsTx(ctx, tx, []settingWrite{
			{SettingAssistantName, next.Name, false},
			{SettingAssistantDMMode, string(next.DMMode), false}, {SettingAssistantDMUserIDs, strings.Join(ids, ","), false},
			{SettingAssistantPersona, next.Persona, false},
			{SettingAssistantTurnDeadline, strconv.Itoa(int(next.TurnDeadline / time.Second)), false},
			{SettingAssistantIterationCap, strconv.Itoa(next.IterationCap), false},
		}); err != nil {
			return err
		}
		detail := "saved, nothing changed"
		if changes := diffBehaviour(cur, next); len(changes) > 0 {
			detail = strings.Join(changes, "; ")
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionAssistantBehaviour, Target: "assistant", Detail: detail, IP: who.IP})
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return AssistantBehaviour{}, err
		}
		return AssistantBehaviour{}, fmt.Errorf("settings: save assistant behaviour: %w", err)
	}
	return next, nil
}

// diffBehaviour names the changes from cur to next; the persona and the
// DM list only as changed (a count for the list), never their content.
func diffBehaviour(cur, next AssistantBehaviour) []string {
	var out []string
	if cur.Name != next.Name {
		if next.Name == "" {
			out = append(out, "assistant name default")
		} else {
			out = append(out, "assistant name "+strconv.Quote(next.Name))
		}
	}
	if cur.DMMode != next.DMMode {
		out = append(out, "direct messages "+string(next.DMMode))
	}
	if !slices.Equal(cur.DMUserIDs, next.DMUserIDs) {
		out = append(out, fmt.Sprintf("direct-message users %d", len(next.DMUserIDs)))
	}
	if cur.Persona != next.Persona {
		if next.Persona == "" {
			out = append(out, "persona default")
		} else {
			out = append(out, "persona changed")
		}
	}
	if cur.TurnDeadline != next.TurnDeadline {
		out = append(out, "turn deadline "+next.TurnDeadline.String())
	}
	if cur.IterationCap != next.IterationCap {
		out = append(out, "iteration cap "+strconv.Itoa(next.IterationCap))
	}
	return out
}
