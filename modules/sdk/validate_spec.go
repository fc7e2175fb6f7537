package sdk

import (
	"fmt"
	"unicode/utf8"
)

// MaxDescriptionLen is the most characters a Spec's Description may have.
const MaxDescriptionLen = 300

// Validate runs the static preflight checks the host runs on a spec before
// any module code: API version ("Kimi module 'x' requires module API N; core
// provides 2"), a Create function, then the declarations — name, settings,
// permissions, services, guild-settings schema — each wrapped as
// "Kimi module 'x' has an invalid declaration: <msg>" (the cause is
// available through errors.Unwrap / errors.As). Checks that need the whole
// selection (dependencies active, consumes matched by a provider) are the
// host's; capabilities are checked by CheckCapabilities.
func (s Spec) Validate() error {
	if s.APIVersion != APIVersion {
		return contractErrorf("Kimi module %s requires module API %d; core provides %d", pyRepr(s.Name), s.APIVersion, APIVersion)
	}
	if err := s.validateDeclarations(); err != nil {
		return &ModuleContractError{
			Message: fmt.Sprintf("Kimi module %s has an invalid declaration: %s", pyRepr(s.Name), err.Error()),
			Err:     err,
		}
	}
	return nil
}

func (s Spec) validateDeclarations() error {
	if err := validateModuleName(s.Name); err != nil {
		return err
	}
	if s.Create == nil {
		return contractErrorf("module %s has no create function", pyRepr(s.Name))
	}
	if n := utf8.RuneCountInString(s.Description); n > MaxDescriptionLen {
		return contractErrorf("module %s has a description of %d characters; the most is %d", pyRepr(s.Name), n, MaxDescriptionLen)
	}
	if s.Settings != nil {
		if err := s.Settings.Validate(s.Name); err != nil {
			return err
		}
	}
	if err := validatePermissions(s.Name, s.Permissions); err != nil {
		return err
	}
	if err := validateServices(s.Name, s.Dependencies, s.Provides, s.Consumes); err != nil {
		return err
	}
	if err := validateDeclaredNames(s.Name, s.Tools, s.Commands); err != nil {
		return err
	}
	if s.GuildSettings != nil {
		if err := s.GuildSettings.ValidateSchema(s.Name); err != nil {
			return err
		}
	}
	return nil
}
