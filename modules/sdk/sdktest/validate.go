package sdktest

import "github.com/kimiapp/kimi/modules/sdk"

// validateCommandSpec runs the SDK's command validator (names, limits,
// options), so a command the fake accepts is one the host accepts.
func validateCommandSpec(spec sdk.CommandSpec) error { return sdk.ValidateCommandSpec(spec) }

// validateControls checks message controls and layout the way the host
// does before sending.
func validateControls(module string, components []sdk.Component, layout *sdk.OutgoingLayout) error {
	return sdk.ValidateMessageControls(module, components, layout)
}
