package kudos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
)

// What the LLM sees. Parameters are JSON Schema; additionalProperties false
// rejects unexpected arguments.
var (
	giveParameters = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"user": map[string]any{
				"type":        "string",
				"description": "The recipient's Discord user id, or an @mention such as <@123>.",
			},
			"reason": map[string]any{
				"type":        "string",
				"description": "One sentence saying what they did (under 200 characters).",
			},
		},
		"required":             []string{"user", "reason"},
		"additionalProperties": false,
	}
	leaderboardParameters = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"days": map[string]any{
				"type":        "integer",
				"description": "Window in days, 1-365. Defaults to 30.",
			},
		},
		"required":             []string{},
		"additionalProperties": false,
	}
)

// tools declares the module's LLM tools; create registers them.
func (m *module) tools() []sdk.Tool {
	return []sdk.Tool{
		{
			// A core tool: visible to every qualifying tier from the start
			// of a turn. Guild-only by default.
			Name:        ToolGive,
			Description: "Give kudos to a server member on behalf of the person you are talking to.",
			Parameters:  giveParameters,
			Handler:     m.toolGive,
			MinTier:     sdk.TierMember,
		},
		{
			// A searchable tool: hidden until the model activates it, which
			// keeps rarely needed tools out of every prompt.
			Name:        ToolLeaderboard,
			Description: "Show which members received the most kudos recently.",
			Parameters:  leaderboardParameters,
			Handler:     m.toolLeaderboard,
			MinTier:     sdk.TierMember,
			Searchable:  true,
		},
	}
}

// decodeArgs reads the model's arguments loosely: the model may send a
// number where the schema says string, and the handler decides.
func decodeArgs(raw json.RawMessage) map[string]any {
	args := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&args) // malformed arguments read as empty
	return args
}

// toolGive gives kudos on behalf of the person talking to the model. The
// giver is the trusted caller (tc), never an argument.
func (m *module) toolGive(ctx context.Context, tc sdk.ToolContext, raw json.RawMessage) (string, error) {
	// Kudos are a guild artifact: a guild-less caller (DM, personal chat)
	// is refused rather than widened.
	if tc.GuildID == 0 {
		return "Kudos can only be given inside a server.", nil
	}
	args := decodeArgs(raw)
	receiver, ok := parseUserID(args["user"])
	if !ok {
		return "Provide the recipient as a numeric Discord user id or an @mention.", nil
	}
	reason, _ := args["reason"].(string)
	k, err := m.give(ctx, tc.GuildID, tc.UserID, receiver, reason, tc.TrustTier)
	if msg, refused := asRefused(err); refused {
		return msg, nil
	}
	if err != nil {
		return "", err
	}
	return summary(k), nil
}

// toolLeaderboard is a read-only view the model can quote.
func (m *module) toolLeaderboard(ctx context.Context, tc sdk.ToolContext, raw json.RawMessage) (string, error) {
	if tc.GuildID == 0 {
		return "The kudos leaderboard is only available inside a server.", nil
	}
	days := daysArg(decodeArgs(raw)["days"])
	entries, err := m.leaderboard(ctx, tc.GuildID, days, m.cfg.boardSize)
	if err != nil {
		return "", err
	}
	if len(entries) == 0 {
		return fmt.Sprintf("Nobody has received kudos in the last %d day(s).", days), nil
	}
	lines := []string{fmt.Sprintf("Kudos received in the last %d day(s):", days)}
	for i, e := range entries {
		lines = append(lines, fmt.Sprintf("%d. <@%d> — %d", i+1, e.UserID, e.Count))
	}
	return strings.Join(lines, "\n"), nil
}

// parseUserID accepts 123, "123", "<@123>" or "<@!123>" and rejects
// anything else, including 0 and ids beyond 64 bits.
func parseUserID(v any) (uint64, bool) {
	var token string
	switch t := v.(type) {
	case string:
		token = t
	case json.Number:
		token = t.String()
	default:
		return 0, false
	}
	token = strings.TrimSpace(token)
	if strings.HasPrefix(token, "<@") && strings.HasSuffix(token, ">") {
		token = strings.TrimLeft(token[2:len(token)-1], "!")
	}
	if token == "" || strings.Trim(token, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseUint(token, 10, 64)
	if err != nil || id == 0 {
		return 0, false
	}
	return id, true
}

// daysArg reads the model's loosely typed days argument: defaultBoardDays
// when absent or unreadable, fractions truncated, clamped by clampDays.
func daysArg(v any) int {
	switch t := v.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return clampDays(n)
		}
		if f, err := t.Float64(); err == nil && !math.IsNaN(f) {
			return int(max(min(math.Trunc(f), maxBoardDays), 1))
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64); err == nil {
			return clampDays(n)
		}
	}
	return defaultBoardDays
}
