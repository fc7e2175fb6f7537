// Package kimitest runs a module on the real Kimi appliance, in-process,
// from `go test`: the same composition `kimi serve --demo` runs, started
// for one test and torn down with it.
//
// What is real: the store (SQLite on a t.TempDir() database with Kimi's
// migrations and the modules' own), the module host (preflight, the
// authorizer that confines a module to its tables, containment, health),
// the event bus, the durable scheduler, scheduled results and tasks,
// proposals, the assistant, the admin server on a loopback port, and the
// bot — discordgo itself, with Kimi's gateway filter, rate limiting and
// command sync — connected to fakediscord, a protocol-level fake Discord
// (REST and the gateway, on loopback) with a seeded guild. What is fake:
// Discord (fakediscord) and, in demo mode, the assistant's model (a
// scripted model on loopback).
//
// How it differs from modules/sdk/sdktest: sdktest gives each port a fake,
// so a module's unit tests need only the SDK and run in microseconds; it
// cannot tell whether the host's authorizer accepts a migration, whether a
// command is synced after a restart, or what Discord really receives.
// kimitest can: the module runs exactly as an operator's build runs it,
// and the test acts as Discord's members (Appliance.Post, Command, Click,
// Pick, SubmitModal, BulkDelete, …) and as the operator (SetServerSetup,
// SetModuleSettings, SetModuleEnabled, SaveModuleSettings, Approve,
// Restart, Module, and Admin for the admin's own pages and forms), moves
// the host's clock (WithControlledClock, Advance: the modules' jobs, the
// scheduled tasks and rt.Now), and waits — event-driven, with a deadline,
// never a sleep — for what the bot sent (WaitMessage, WaitResponse).
//
// A failed test shows the appliance's last log lines, and keeps its whole
// log in a file of $KIMI_ARTIFACTS (default /tmp/kimi-artifacts), where
// KeepArtifact keeps a test's own files (a browser's screenshot).
//
// Each Start is its own appliance (its own data directory, ports and fake
// Discord), so tests may call t.Parallel.
package kimitest
