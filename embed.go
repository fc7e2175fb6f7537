// Package kimi holds the files embedded into the Kimi binary: the admin UI's
// static assets and the core database migrations. Everything else lives under
// app/ (the appliance) and modules/ (the module SDK and bundled modules).
package kimi

import (
	"embed"
	"io/fs"
)

// Static holds web/static: CSS, scripts and images served by the admin UI.
//
//go:embed web/static
var Static embed.FS

// Migrations holds db/migrations: the goose SQL migrations of the core schema.
//
//go:embed db/migrations/*.sql
var Migrations embed.FS

// StaticFS returns the static assets rooted at web/static.
func StaticFS() fs.FS { return mustSub(Static, "web/static") }

// MigrationsFS returns the core migrations rooted at db/migrations.
func MigrationsFS() fs.FS { return mustSub(Migrations, "db/migrations") }

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		// fs.Sub only fails on an invalid path, which is a constant here.
		panic("kimi: embedded " + dir + ": " + err.Error())
	}
	return sub
}
