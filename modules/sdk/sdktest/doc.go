// Package sdktest provides a fake for every port of the module SDK, so a
// module's tests need nothing but Go: no host, no Discord, no database
// server.
//
// Each fake behaves like the reference test kit (kimi-agent-module-api's
// testing.py, SDK 2.4): it enforces what the host enforces at the port
// boundary (declared Discord actions, publish namespaces, custom ids,
// duplicate registrations, scheduled-result access) with the SDK's own
// validators and exact messages, and it records what the module asked for
// so a test can assert on it. Time never passes by itself: the scheduler
// runs jobs only in RunDue, events reach handlers only in Deliver, and
// scheduled results only in Deliver.
//
// Storage is real: SQLite in a file under t.TempDir() (WAL, a single
// serialized writer with BEGIN IMMEDIATE, a query-only reader pool), with
// Migrate applying a module's named migrations through a ledger.
//
// NewRuntime wires every fake for one module spec — create with a recording
// load context, migrate, build the runtime — so a module test reads:
//
//	func TestGreets(t *testing.T) {
//		ctx := context.Background()
//		rt := sdktest.NewRuntime(t, mymodule.Spec(), sdktest.WithSettings(map[string]any{"limit": 2}))
//		rt.Start(ctx) // closed when the test ends
//		reply, err := rt.CallTool(ctx, "my_tool", map[string]any{"x": 1},
//			sdk.ToolContext{UserID: 2, GuildID: 100, TrustTier: sdk.TierMember})
//		…
//	}
//
// The fakes stay reachable on the Runtime (rt.Scheduler.RunDue,
// rt.Events.Deliver, rt.Discord.CallsFor, rt.Health.Keyed, …); each can
// also be built on its own with its New function.
//
// What the fakes let a test control beyond the reference kit:
// FakeGuildSettings.ReplaceSilently changes a document without firing
// OnChange (a stale cache); FakeEvents.SetGuildFilter is the guild filter
// Deliver applies at enqueue and before each handler (an inactive guild's
// event reaches no handler, Deliver returns 0); InteractionInput's
// MessageUsesLayout is a component on a Components V2 message, whose edits
// must stay layouts; FakeInteractions.RunCommand and RunAutocomplete run
// global and per-guild commands through one tier and guild-active gate;
// FakeHTTP.Route replaces a prefix's answer when routed again, and a done
// ctx fails a request with ctx.Err() wrapped as net/http wraps it.
//
// Every fake is safe for concurrent use.
package sdktest
