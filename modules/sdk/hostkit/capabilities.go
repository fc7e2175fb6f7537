package hostkit

import (
	"slices"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
)

// CheckCapabilities is preflight's capability step, run once the host
// knows what it advertises: every RequiresCapabilities entry must be in
// caps ("Kimi module 'x' requires unavailable capability 'c'"). Host and
// fakes share it.
func CheckCapabilities(s sdk.Spec, caps sdk.Capabilities) error {
	for _, c := range s.RequiresCapabilities {
		if !caps.Has(c) {
			return contractErrorf("Kimi module %s requires unavailable capability %s", pyRepr(s.Name), pyRepr(c))
		}
	}
	return nil
}

// BaselineCapabilities are advertised by every host.
func BaselineCapabilities() []string { return []string{sdk.CapDiscordHistory, sdk.CapProposals} }

// MissingActivationCapabilities returns the spec's ActivationCapabilities
// that caps does not advertise, in declaration order (duplicates once). A
// module with any is soft-disabled: not created, not migrated, with the
// reason ActivationDisabledReason gives; its dependents are disabled too.
func MissingActivationCapabilities(s sdk.Spec, caps sdk.Capabilities) []string {
	var missing []string
	for _, c := range s.ActivationCapabilities {
		if !caps.Has(c) && !slices.Contains(missing, c) {
			missing = append(missing, c)
		}
	}
	return missing
}

// ActivationDisabledReason is the reference's reason for a soft-disabled
// module: "missing activation capability a, b".
func ActivationDisabledReason(missing []string) string {
	return "missing activation capability " + strings.Join(missing, ", ")
}
