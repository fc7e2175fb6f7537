package guildcfg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Revision is the sha256 hex of a document's bytes; an absent document has
// the revision of the empty text, as in the original.
func Revision(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// EmptyRevision is the revision of an absent document.
var EmptyRevision = Revision("")

// ShortRevision is the form guild-module revisions are shown in (and what
// sdk.GuildSettingsSnapshot.Revision holds): the first 16 hex digits.
func ShortRevision(revision string) string {
	if len(revision) < 16 {
		return revision
	}
	return revision[:16]
}

// EvaluateModuleDocument parses a guild:<id>:<module> document and applies
// the module's schema exactly as sdk.EvaluateGuildSettings does for the
// fakes: frontmatter only, unknown keys, coercion, then the validator. The
// snapshot always comes back (defaults where the document does not parse,
// Valid false with the errors); problems carries each error with its field
// (the key, or DocumentField for syntax, body text and validator errors).
// exists says whether a document is stored: an absent one evaluates the
// defaults and has revision "".
func EvaluateModuleDocument(schema sdk.GuildSettingsSchema, text string, exists bool) (sdk.GuildSettingsSnapshot, []FieldError) {
	snap := sdk.GuildSettingsSnapshot{}
	if exists {
		snap.Revision = ShortRevision(Revision(text))
	}
	fm, err := ParseFrontmatter(text)
	var problems []FieldError
	if err == nil && strings.TrimSpace(fm.Body) != "" {
		err = invalid("", MsgFrontmatterOnly, []FieldError{{Message: MsgFrontmatterOnly}})
	}
	if err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			problems = verr.Problems
		} else {
			problems = []FieldError{{Message: err.Error()}}
		}
		defaults := schema.Evaluate(nil)
		snap.Values = defaults.Values
		for _, p := range problems {
			snap.Errors = append(snap.Errors, p.Message)
		}
		return snap, problems
	}
	result := schema.Evaluate(fm.Values)
	snap.Values, snap.Errors, snap.Valid = result.Values, result.Errors, result.Valid()
	if snap.Valid {
		return snap, nil
	}
	// Give each of the SDK's messages its field: an unknown key, a field
	// that does not coerce, or (for the validator's texts) the document.
	fieldOf := map[string]string{}
	for key := range fm.Values {
		if _, ok := schema.Field(key); !ok {
			fieldOf["unknown setting "+hostkit.Repr(key)] = key
		}
	}
	for _, f := range schema.Fields {
		if _, err := f.Coerce(fm.Values[f.Name]); err != nil {
			fieldOf[err.Error()] = f.Name
		}
	}
	for _, msg := range result.Errors {
		field := fieldOf[msg]
		problems = append(problems, FieldError{Field: field, Line: fm.Lines[field], Message: msg})
	}
	return snap, problems
}
