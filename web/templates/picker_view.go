package templates

// Picker is a field that takes channel, role or member ids, shown as a
// select of what the bot can see (grouped, for channels, by category) and
// a search box beside it: its datalist suggests the same choices by name
// without JavaScript, and an id typed or pasted there is posted under the
// same name (form's pickedIDs and pickedID read both). picker.js filters
// the select as the operator types and, for members, asks Search.
type Picker struct {
	ID, Name, Label, Hint, Error string
	// Multiple makes it a list (a multi-select).
	Multiple bool
	// None is a single picker's empty choice ("None", "Default").
	None   string
	Groups []PickGroup
	// Unknown are chosen ids the bot cannot see (or, for channels, that
	// are not text channels where only text makes sense): kept selected,
	// marked by Note.
	Unknown []PickOption
	// Search is the member-search endpoint ("" for channels and roles,
	// whose choices are all in the page); the datalist then starts empty.
	Search string
	// GuildFrom is the id of the guild picker whose guild the member
	// search follows (the task form's owner): the script searches that
	// guild's members once one is chosen.
	GuildFrom string
}

// PickGroup is an optgroup ("" Label: options outside any group).
type PickGroup struct {
	Label   string
	Options []PickOption
}

// PickOption is one choice: the id posted and its name.
type PickOption struct {
	Value, Label string
	Selected     bool
	// Note says why an Unknown choice is marked ("not visible to the bot").
	Note string
}

// pickerSize is a multi-select's height in rows: its options, 4 to 8.
func pickerSize(p Picker) int {
	n := len(p.Unknown)
	for _, g := range p.Groups {
		n += len(g.Options)
		if g.Label != "" {
			n++
		}
	}
	return min(max(n, 4), 8)
}

// pickerNotes are the lines under a picker naming its marked choices.
func pickerNotes(p Picker) []string {
	out := make([]string, 0, len(p.Unknown))
	for _, u := range p.Unknown {
		out = append(out, u.Value+": "+u.Note)
	}
	return out
}

// withHint is p with hint h.
func withHint(p Picker, h string) Picker {
	p.Hint = h
	return p
}
