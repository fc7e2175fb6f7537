package kudos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// postDigest posts the leaderboard to every guild that configured a digest
// channel.
//
// Returning an error from a job makes the scheduler back off and retry the
// whole job, which is right for an outage but wrong for one guild's broken
// channel. So failures are per guild: logged, counted into the keyed
// "digest" health concern, and the job itself succeeds.
func (m *module) postDigest(ctx context.Context, run sdk.JobRun) error {
	rt, ledger, err := m.started()
	if err != nil {
		return err
	}
	if rt.GuildSettings == nil {
		return nil
	}
	window := m.cfg.digestInterval
	since := m.clock().Add(-window)
	posted, failed := 0, 0
	for _, guildID := range rt.GuildSettings.GuildIDs() {
		if !rt.GuildSettings.IsEnabled(ctx, guildID) {
			continue
		}
		err := m.postGuildDigest(ctx, rt, ledger, guildID, since, window)
		switch {
		case errors.Is(err, errNothingToPost):
		case err != nil:
			failed++
			rt.Logger.Error("kudos digest failed", "guild", guildID, "attempt", run.Attempt, "err", err)
		default:
			posted++
		}
	}
	state, detail := sdk.HealthHealthy, ""
	if failed > 0 {
		state, detail = sdk.HealthDegraded, fmt.Sprintf("%d guild digest(s) failed", failed)
	}
	m.reportHealth()
	rt.Health.ReportKey(HealthKeyDigest, state, detail, map[string]float64{
		"digest_posted":   float64(posted),
		"digest_failures": float64(failed),
	})
	return nil
}

// errNothingToPost marks a guild skipped without failure: no channel, or no
// kudos in the window.
var errNothingToPost = errors.New("kudos: nothing to post")

func (m *module) postGuildDigest(ctx context.Context, rt *sdk.Runtime, ledger *ledger, guildID uint64, since time.Time, window time.Duration) error {
	settings, err := rt.GuildSettings.Get(ctx, guildID)
	if err != nil {
		return err
	}
	channel := settings.ID(FieldDigestChannel)
	if channel == 0 {
		return errNothingToPost
	}
	entries, err := ledger.top(ctx, guildID, since, m.cfg.boardSize)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return errNothingToPost
	}
	// send_message is declared in Permissions.DiscordActions; the port
	// refuses anything undeclared with UndeclaredDiscordActionError.
	_, err = rt.Discord.SendMessage(ctx, channel, sdk.OutgoingMessage{Embed: m.boardEmbed(entries, digestDays(window))})
	return err
}
