package kudos

import (
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Deployment settings: the operator's, the same in every guild. The host
// reads each from REFERENCE_KUDOS_<FIELD> and lets the operator override the
// exposed ones in the admin UI. A field holding a secret, URL or path would
// be EnvironmentOnly (or Secret) instead.
const (
	SettingDailyLimit     = "daily_limit"
	SettingBoardSize      = "board_size"
	SettingDigestInterval = "digest_interval_seconds"
	// SettingResultGuild enables the scheduled-result subscriber in one
	// guild; 0 (the default) leaves it off.
	SettingResultGuild = "result_guild_id"
)

// settingsDefinition declares the settings. Every exposed number has a
// minimum, so an operator typo cannot disable the limit.
func settingsDefinition() *sdk.SettingsDefinition {
	return &sdk.SettingsDefinition{
		Label: "Kudos",
		Fields: []sdk.SettingField{
			{Name: SettingDailyLimit, Label: "Daily limit", Kind: sdk.SettingInt, Default: 5, Min: 1, HasMin: true,
				Help: "Kudos one member may give per guild in any 24-hour window."},
			{Name: SettingBoardSize, Label: "Leaderboard size", Kind: sdk.SettingInt, Default: 10, Min: 1, HasMin: true,
				Help: "How many members the leaderboard and digest list."},
			{Name: SettingDigestInterval, Label: "Digest interval (seconds)", Kind: sdk.SettingInt, Default: 7 * 24 * 60 * 60, Min: 60, HasMin: true,
				Help: "How often the kudos digest is posted to each guild's digest channel."},
			{Name: SettingResultGuild, Label: "Published-task results guild", Kind: sdk.SettingInt, Default: 0, Min: 0, HasMin: true,
				Help: "Count published scheduled-task results in this guild; 0 disables the subscriber."},
		},
	}
}

// config is the typed view of the prepared settings the module uses.
type config struct {
	dailyLimit     int
	boardSize      int
	digestInterval time.Duration
	resultGuild    uint64
}

func configFrom(s sdk.Settings) config {
	guild := s.Int(SettingResultGuild)
	return config{
		dailyLimit:     int(s.Int(SettingDailyLimit)),
		boardSize:      int(s.Int(SettingBoardSize)),
		digestInterval: time.Duration(s.Int(SettingDigestInterval)) * time.Second,
		resultGuild:    uint64(max(guild, 0)),
	}
}
