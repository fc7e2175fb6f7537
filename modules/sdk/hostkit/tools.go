package hostkit

import "github.com/kimiapp/kimi/modules/sdk"

// ValidateTool checks a tool declaration: a name, a description and a handler.
func ValidateTool(t sdk.Tool) error {
	if t.Name == "" {
		return contractErrorf("a tool needs a name")
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
