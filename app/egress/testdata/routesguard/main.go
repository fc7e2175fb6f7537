// Command routesguard is built by TestTestRoutesOnlyInTestBinaries: an
// ordinary binary that asks the egress for test routes, which it must
// refuse.
package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/modules/sdk"
)

func main() {
	_, err := egress.New(egress.Options{Module: "m", Rules: []sdk.HostRule{{Host: "api.example.com"}},
		TestRoutes: map[string]netip.AddrPort{"api.example.com": netip.MustParseAddrPort("127.0.0.1:1")}})
	if errors.Is(err, egress.ErrTestRoutes) {
		fmt.Println("refused")
		return
	}
	fmt.Println("accepted:", err)
	os.Exit(1)
}
