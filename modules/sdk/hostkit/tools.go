package hostkit

import (
	"regexp"

	"github.com/kimiapp/kimi/modules/sdk"
)

// toolNameRE is the tool name OpenAI-compatible providers accept; a name
// outside it fails the whole chat request that offers the tool.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidateTool checks a tool declaration: a name providers accept
// (`^[a-zA-Z0-9_-]{1,64}$`), a description, a handler, and Parameters that
// are an object schema ("type": "object"; nil means no arguments).
func ValidateTool(t sdk.Tool) error {
	if t.Name == "" {
		return contractErrorf("a tool needs a name")
	}
	if !toolNameRE.MatchString(t.Name) {
		return contractErrorf("invalid tool name %s: use 1 to 64 letters, digits, '_' or '-'", pyRepr(t.Name))
	}
	if t.Description == "" {
		return contractErrorf("tool %s needs a description", pyRepr(t.Name))
	}
	if t.Handler == nil {
		return contractErrorf("tool %s needs a handler", pyRepr(t.Name))
	}
	if t.MinTier != 0 && !t.MinTier.Valid() {
		return contractErrorf("tool %s has an invalid min_tier", pyRepr(t.Name))
	}
	if t.Parameters != nil && t.Parameters["type"] != "object" {
		return contractErrorf("tool %s parameters must be a JSON object schema (\"type\": \"object\")", pyRepr(t.Name))
	}
	return nil
}

// NewToolsSealed builds the error for a registration after loading.
func NewToolsSealed(name string) *sdk.ModuleContractError {
	return contractErrorf("tool %s cannot be registered after module loading; register tools from ModuleSpec.create(), not start()", pyRepr(name))
}

// ValidateFileReadLimit checks maxBytes is positive (code invalid_limit).
func ValidateFileReadLimit(maxBytes int64) error {
	if maxBytes <= 0 {
		return &sdk.FileAccessError{Code: sdk.FileInvalidLimit, Message: "max_bytes must be a positive integer"}
	}
	return nil
}
