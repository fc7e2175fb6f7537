package kudos

import "github.com/kimiapp/kimi/modules/sdk"

// Guild settings: each guild's own, edited by its staff through proposals
// (see /kudos setup) and in the admin UI. The host validates each guild's
// document against the schema and hands the module typed snapshots; the
// module never parses a document itself.
const (
	FieldDigestChannel  = "digest_channel_id"
	FieldGiverMinTier   = "giver_min_tier"
	FieldAllowThankBack = "allow_thank_back"
)

// ErrStaffOnlyDigest is the cross-field rule's message.
const ErrStaffOnlyDigest = "a digest channel makes no sense when only staff may give kudos"

func guildSettingsSchema() *sdk.GuildSettingsSchema {
	return &sdk.GuildSettingsSchema{
		Fields: []sdk.GuildSettingField{
			{Name: FieldDigestChannel, Kind: sdk.GuildSettingID, Refers: sdk.RefChannel,
				Help: "Channel that receives the periodic kudos digest. Unset disables the digest."},
			{Name: FieldGiverMinTier, Kind: sdk.GuildSettingEnum, Choices: []string{"member", "regular", "staff"}, Default: "member",
				Help: "Lowest trust tier that may give kudos in this guild."},
			{Name: FieldAllowThankBack, Kind: sdk.GuildSettingBool, Default: true,
				Help: "Whether the receiver of a kudos may thank the giver back with one click."},
		},
		// The default policy takes the whole guild offline when its document
		// is broken: right for an enforcement module that must fail closed,
		// far too drastic for a cosmetic feature. A broken kudos document
		// only disables kudos there.
		InvalidPolicy: sdk.DisableModule,
		Validate:      validateGuildSettings,
	}
}

// validateGuildSettings holds the cross-field rules the per-field kinds
// cannot express; any message marks the guild's document invalid.
func validateGuildSettings(values map[string]any) []string {
	var errs []string
	// The digest celebrates member-to-member recognition; it is pointless
	// when only staff may give kudos.
	if values[FieldGiverMinTier] == "staff" && nonZero(values[FieldDigestChannel]) {
		errs = append(errs, ErrStaffOnlyDigest)
	}
	return errs
}

// nonZero reports whether an id value is set (the host passes uint64; a
// hand-written document may hold any integer).
func nonZero(v any) bool {
	switch n := v.(type) {
	case nil:
		return false
	case uint64:
		return n != 0
	case int:
		return n != 0
	case int64:
		return n != 0
	case string:
		return n != "" && n != "0"
	}
	return true
}
