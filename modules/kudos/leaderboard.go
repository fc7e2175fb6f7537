package kudos

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// The leaderboard is shown by the LLM tool, /kudos top and the digest, so
// its window and rendering live here once.

// Leaderboard windows in days: /kudos top and the leaderboard tool show
// defaultBoardDays unless asked for 1..maxBoardDays.
const (
	defaultBoardDays = 30
	maxBoardDays     = 365
)

// clampDays bounds a requested window to 1..maxBoardDays.
func clampDays(n int64) int { return int(max(min(n, maxBoardDays), 1)) }

// leaderboard ranks the receivers of the last days of a guild, at most
// limit entries. The commands and the tool pass board_size; the service
// passes its caller's limit.
func (m *module) leaderboard(ctx context.Context, guildID uint64, days, limit int) ([]BoardEntry, error) {
	_, ledger, err := m.started()
	if err != nil {
		return nil, err
	}
	return ledger.top(ctx, guildID, m.clock().Add(-time.Duration(days)*day), limit)
}

// boardEmbed renders a leaderboard for /kudos top and the digest.
func (m *module) boardEmbed(entries []BoardEntry, days int) *sdk.OutgoingEmbed {
	description := fmt.Sprintf("Nobody has received kudos in the last %d day(s).", days)
	if len(entries) > 0 {
		lines := make([]string, len(entries))
		for i, e := range entries {
			lines[i] = fmt.Sprintf("**%d.** <@%d> — %d", i+1, e.UserID, e.Count)
		}
		description = strings.Join(lines, "\n")
	}
	return &sdk.OutgoingEmbed{
		Title:       fmt.Sprintf("Kudos, last %d day(s)", days),
		Description: description,
		Footer:      fmt.Sprintf("Top %d", m.cfg.boardSize),
		Timestamp:   true,
	}
}

// digestDays is the digest window in whole days (at least 1).
func digestDays(interval time.Duration) int {
	return max(1, int(math.RoundToEven(interval.Hours()/24)))
}
