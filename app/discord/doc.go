// Package discord connects Kimi to Discord on discordgo and backs the module
// ports that touch it: the normalized discord.* events (events.go), the
// Discord actions port (actions.go, over Kimi's own ctx-aware rate limiting
// in transport.go), the interactions port (interactions.go) and the
// connection itself (bot.go: token, intents, Kimi's reconnect loop, status).
//
// It also holds the adapters that implement the core features' ports, one
// file per feature, each on the feature's own types (no mirror types
// here): tasks.go (Poster, NewPoster: app/tasks' Poster, Checker and
// Readiness), proposals.go (Cards, NewCards: app/proposals' Discord — the
// review cards, the owner's DM) and results.go (ChannelViews,
// NewChannelViews: app/results' ChannelViews for the scheduled results'
// access check). The rule a feature owns stays in the feature.
//
// discordgo defaults Kimi overrides (see DESIGN.md and go-stack-notes §B4):
// ShouldReconnectOnError is off (Kimi reconnects itself and stops on fatal
// close codes), ShouldRetryOnRateLimit is off and MaxRestRetries is 0 (Kimi's
// transport waits and retries within the caller's ctx, and never repeats a
// request that may have been processed), SyncEvents is on (handlers only
// normalize and enqueue, in order), and Kimi keeps its own bounded message
// and member caches because discordgo's state keeps none by default.
package discord
