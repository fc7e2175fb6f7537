package egress

import (
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// AllowPrivateNetworkSetting is the deployment setting the host adds to a
// module whose rules name a private network (sdk.NetworkPrivate): a
// boolean, false by default, set by the operator in the module's settings
// (the admin's module page, or <MODULE>_ALLOW_PRIVATE_NETWORK). Until
// it is true such a rule is held to the public rule's addresses. The name
// is the host's: a module field of that name is replaced.
const AllowPrivateNetworkSetting = "allow_private_network"

// allowanceField is the setting's definition.
var allowanceField = sdk.SettingField{
	Name:  AllowPrivateNetworkSetting,
	Label: "Allow private network",
	Help: "Lets this module's host rules that name a private network reach private, loopback and " +
		"link-local addresses (never cloud metadata endpoints). Off: those rules reach public addresses only.",
	Kind:    sdk.SettingBool,
	Default: false,
}

// NamesPrivateNetwork reports whether any of the rules names a private
// network.
func NamesPrivateNetwork(rules []sdk.HostRule) bool {
	return slices.ContainsFunc(rules, func(r sdk.HostRule) bool { return r.EffectiveNetwork() == sdk.NetworkPrivate })
}

// WithAllowanceSetting returns spec with AllowPrivateNetworkSetting in its
// settings definition when its rules name a private network (spec
// unchanged otherwise). The spec's definition is copied, not modified.
func WithAllowanceSetting(spec sdk.Spec) sdk.Spec {
	if !NamesPrivateNetwork(spec.Permissions.HTTPHosts) {
		return spec
	}
	def := sdk.SettingsDefinition{Label: spec.Name}
	if spec.Settings != nil {
		def.Label = spec.Settings.Label
		def.Fields = slices.DeleteFunc(slices.Clone(spec.Settings.Fields), func(f sdk.SettingField) bool {
			return f.Name == AllowPrivateNetworkSetting
		})
	}
	def.Fields = append(def.Fields, allowanceField)
	spec.Settings = &def
	return spec
}

// PrivateNetworkAllowed reports whether the operator allowed private
// networks in settings.
func PrivateNetworkAllowed(settings sdk.Settings) bool {
	return settings.Bool(AllowPrivateNetworkSetting)
}
