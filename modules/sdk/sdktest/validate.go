package sdktest

import "github.com/kimiapp/kimi/modules/sdk"

// validateCommandSpec runs the SDK's command validator, so a command the
// fake accepts is one the host accepts.
func validateCommandSpec(spec sdk.CommandSpec) error {
	if spec.Name == "" {
		return &sdk.ModuleContractError{Message: "a command needs a name"}
	}
	return sdk.ValidateCommandSpec(spec)
}

// validateControls checks message controls and layout the way the host
// does before sending: each button's and select's spec, the row packing,
// and the layout's limits.
func validateControls(module string, components []sdk.Component, layout *sdk.OutgoingLayout) error {
	for _, c := range components {
		switch spec := c.(type) {
		case sdk.ButtonSpec:
			if err := sdk.ValidateButtonSpec(module, spec); err != nil {
				return err
			}
		case *sdk.ButtonSpec:
			if err := sdk.ValidateButtonSpec(module, *spec); err != nil {
				return err
			}
		case sdk.SelectSpec:
			if err := sdk.ValidateSelectSpec(spec); err != nil {
				return err
			}
		case *sdk.SelectSpec:
			if err := sdk.ValidateSelectSpec(*spec); err != nil {
				return err
			}
		}
	}
	if layout != nil {
		if err := sdk.ValidateOutgoingLayout(*layout); err != nil {
			return err
		}
	}
	return sdk.ValidateLayoutComponents(components, layout)
}
