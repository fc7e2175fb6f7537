package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// digestSubscriber subscribes to "digest" in guild 42 at Start.
type digestSubscriber struct{}

func (digestSubscriber) Migrations() []sdk.Migration { return nil }
func (digestSubscriber) Close(context.Context) error { return nil }
func (digestSubscriber) Start(ctx context.Context, rt *sdk.Runtime) error {
	return rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil })
}

// TestServeResultsPages: serve hands the outbox to the admin: a signed-in
// operator's /results lists the subscription a module made at Start (the
// pages answer 503 without the service).
func TestServeResultsPages(t *testing.T) {
	t.Parallel()
	spec := sdk.Spec{Name: "subscriber", Version: "1.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{ScheduledResults: []string{"digest"}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return digestSubscriber{}, nil }}
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{spec}, modules: "subscriber"})
	c := a.signIn()
	code, body := c.get("/results")
	if code != http.StatusOK || !strings.Contains(body, "subscriber") || !strings.Contains(body, "digest") {
		t.Fatalf("/results = %d:\n%s", code, body)
	}
}
