package kudos

import "context"

// Board is the "kudos.board"@1 service other modules consume:
//
//	h, err := rt.Services.Get("kudos.board", 1)
//	board, err := sdk.ServiceAs[kudos.Board](h)
//
// Keep a provided service small and data-only. Consumers hold a handle that
// fails with ServiceUnavailableError once this module closes, so nothing here
// hands out live objects that would outlive the module.
type Board interface {
	// Leaderboard ranks the receivers of the last days in a guild, at most
	// limit entries.
	Leaderboard(ctx context.Context, guildID uint64, days, limit int) ([]BoardEntry, error)
}

type boardService struct{ m *module }

var _ Board = (*boardService)(nil)

// Leaderboard implements Board with the same query /kudos top uses.
func (b *boardService) Leaderboard(ctx context.Context, guildID uint64, days, limit int) ([]BoardEntry, error) {
	return b.m.leaderboard(ctx, guildID, days, limit)
}
