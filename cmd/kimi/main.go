// Command kimi is the Kimi appliance: one static binary with the admin UI,
// the embedded SQLite database, the bundled modules and the maintenance
// commands. Run `kimi help`.
package main

import (
	"context"
	"os"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/modules/all"
)

func main() {
	os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, all.Specs()...))
}
