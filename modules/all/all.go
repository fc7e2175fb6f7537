// Package all lists the modules bundled with the appliance: the one
// registration file the host reads. A custom build adds its own specs next
// to these (see modules/sdk's documentation).
package all

import (
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Specs returns the bundled modules' specs, in a stable order.
func Specs() []sdk.Spec {
	return []sdk.Spec{
		hello.Spec(),
		kudos.Spec(),
	}
}
