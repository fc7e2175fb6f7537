// Package settings holds the runtime settings the operator edits in the admin's Settings page,
// stored in the store's settings table: Worldtree's connection today (LoadWorldtree,
// SaveWorldtree, RemoveWorldtree), the Discord bot's next.
//
// Each change runs in one write transaction with an audit row whose detail names what changed,
// never a secret. A blank key keeps the stored one; KeyUpdate.Clear removes it. Invalid input
// returns an *Error keyed by field and changes nothing. Worldtree.NewClient builds the
// worldtree.Client; Worldtree prints its keys only as set or not set.
package settings
