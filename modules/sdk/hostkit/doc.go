// Package hostkit holds the helpers that hosts and fakes share: the storage
// confinement (the SQLite authorizer's decisions), the
// per-request HTTP policy, health aggregation and bounds, topic matching,
// the port-side checks of commands, components, jobs, tools and scheduled
// results, the naming rules of tables and settings, preflight's capability
// steps, and the constructors of the errors a host raises. app/host and
// modules/sdk/sdktest import it, so the fakes cannot drift from the host.
//
// Module authors never import it: everything a module calls is in
// modules/sdk. It imports only the standard library, modules/sdk and the
// SDK's internal packages.
package hostkit
