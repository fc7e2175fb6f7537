package counter

import (
	"context"
	"fmt"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

func TestCountBumpsPerGuild(t *testing.T) {
	ctx := context.Background()
	rt := sdktest.NewRuntime(t, Spec()) // preflight, create, migrate on real SQLite
	rt.Start(ctx)

	cmd, ok := rt.Interactions.Command("count")
	if !ok || cmd.Spec.EffectiveMinTier() != sdk.TierMember {
		t.Fatalf("command not registered for members: %+v", cmd)
	}
	for want := 1; want <= 2; want++ {
		in := sdktest.NewInteraction(sdktest.InteractionInput{Module: Name, GuildID: 100, UserID: 2})
		if err := cmd.Handler(ctx, in); err != nil {
			t.Fatal(err)
		}
		if last, _ := in.Last(); last.Content != fmt.Sprintf("Count: %d", want) {
			t.Fatalf("reply %q", last.Content)
		}
	}
}
