// Package fakediscord is a protocol-level fake of Discord: an in-process HTTP and websocket
// server that speaks enough of Discord's REST API (v9 and v10) and gateway for the real
// discordgo client, and so for Kimi, to run against it unchanged.
//
// A test starts one fake per test with New, points a discordgo session at it with Attach (which
// swaps the session's HTTP transport and websocket dialer; no discordgo package globals are
// touched, so tests run in parallel), and then:
//
//   - seeds the in-memory model (AddGuild, AddChannel, AddRole, AddMember), which REST reads and
//     the gateway's GUILD_CREATE return as written, and puts back messages an earlier fake held
//     (RestoreMessage: a test build's "Discord" outlives a kill -9 of its process so);
//   - acts as a user (PostMessage, ClickButton, RunCommand, SubmitModal, JoinGuild, ...), which
//     changes the model and dispatches the gateway events Discord would send;
//   - asserts on the recorder (Requests), the model (Messages, Member, ...) and the interaction
//     responses (Interaction, Interactions), or waits for the model to change (Watch: a
//     notification after every REST write and gateway dispatch, no polling);
//   - injects failures: per-route and global rate limits with Discord's X-RateLimit-* headers and
//     429 bodies, one-off 429, 5xx and coded 4xx answers (a 5xx after the message was created;
//     403 50013 or 404 10003/10008 where the model would have let the request through),
//     gateway close codes, Invalid Session, Reconnect, and heartbeats left unacknowledged.
//
// The gateway speaks JSON, with Identify's per-payload zlib compression or, with
// `compress=zlib-stream` on the URL, Discord's transport compression (one zlib context per
// connection, every message sync-flushed).
//
// Discord's limits are enforced with Discord's JSON error bodies (code and message): content
// 2000, 10 embeds and 6000 embed characters, components and custom ids, command names,
// descriptions, options and counts; unknown ids answer 404 with the matching code, and a missing
// permission 403 with code 50013.
package fakediscord
