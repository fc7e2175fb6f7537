package discord_test

import (
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/proposals"
)

// The proposals' adapter implements their port. (The guard is here, in
// the external test package, because app/proposals imports app/discord for
// its buttons' handler.)
var _ proposals.Discord = (*discord.Cards)(nil)
