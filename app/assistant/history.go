package assistant

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// History limits (reference assistant.md §3: the last 20 messages; issue
// 25 item 8: at most 12,000 estimated tokens).
const (
	HistoryMessages = 20
	HistoryTokens   = 12000
	// MaxNameRunes is the longest sanitized display name (Discord's
	// display names are at most 32).
	MaxNameRunes = 32
)

// Roles of the transcript.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one transcript row as the model receives it.
type Message struct {
	Role string
	// Content is, for a user row, "<sanitized display name>: <text>".
	Content string
}

// EstimateTokens is the history's token estimate of s: one token per four
// bytes, rounded up, plus four for the message's framing. It errs high for
// English (about four characters a token) and is cheap and deterministic.
func EstimateTokens(s string) int { return (len(s)+3)/4 + 4 }

// History returns conv's transcript for its next turn, oldest first: the
// last HistoryMessages messages, then the oldest dropped until the
// estimate (EstimateTokens) is at most HistoryTokens. Messages of a turn
// still running are left out (the caller sends the trigger itself), and a
// leading assistant row is dropped so the history starts with a user.
func (c *Conversations) History(ctx context.Context, conv Conversation) ([]Message, error) {
	rows, err := c.st.Reader().QueryContext(ctx, `SELECT m.role, m.author_name, m.content FROM kimi_assistant_messages m
		JOIN kimi_assistant_turns t ON t.id = m.turn_id
		WHERE m.conversation_id = ? AND t.status != 'running' ORDER BY m.id DESC LIMIT ?`, conv.ID, HistoryMessages)
	if err != nil {
		return nil, fmt.Errorf("assistant: history: %w", err)
	}
	defer rows.Close()
	var out []Message // newest first
	budget := HistoryTokens
	for rows.Next() {
		var role, name, content string
		if err := rows.Scan(&role, &name, &content); err != nil {
			return nil, fmt.Errorf("assistant: history: %w", err)
		}
		m := Message{Role: role, Content: content}
		if role == RoleUser {
			m.Content = UserLine(name, content)
		}
		if budget -= EstimateTokens(m.Content); budget < 0 {
			break
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("assistant: history: %w", err)
	}
	slices.Reverse(out)
	for len(out) > 0 && out[0].Role != RoleUser {
		out = out[1:]
	}
	return out, nil
}

// UserLine renders a user's message for the model:
// "<sanitized display name>: <text>".
func UserLine(name, text string) string { return SanitizeName(name) + ": " + text }

// roleWords are names that would read as a transcript's speaker rather
// than a member.
var roleWords = []string{"system", "assistant", "user", "tool", "developer", "function", "model"}

// SanitizeName makes a display name safe to put before a ": " in the
// transcript, so that it cannot forge its structure: control and format
// characters (newlines, tabs, zero-width and bidi controls), line and
// paragraph separators and colon look-alikes become spaces; Discord
// markdown and mention characters (` * ~ | > < # [ ] ( ) \ @) are
// removed; spaces are collapsed and the name clipped to MaxNameRunes. A
// name that starts with a role word (system, assistant, user, tool,
// developer, function, model) or one of reserved (the bot's names),
// whole-word and in any case, is prefixed with "member ". An empty result
// is "member". SanitizeName is idempotent.
func SanitizeName(name string, reserved ...string) string {
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r),
			unicode.Is(unicode.Zp, r), unicode.IsSpace(r), isColon(r):
			space = true
			continue
		case strings.ContainsRune("`*~|><#[]()\\@", r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	s := b.String()
	if s == "" {
		return "member"
	}
	if startsWithWord(s, roleWords) || startsWithWord(s, reserved) {
		s = "member " + s
	}
	if utf8.RuneCountInString(s) > MaxNameRunes {
		s = strings.TrimRight(string([]rune(s)[:MaxNameRunes]), " ")
	}
	return s
}

// startsWithWord reports whether s starts with one of words (any case)
// followed by its end or a character that is not a letter or digit.
func startsWithWord(s string, words []string) bool {
	for _, w := range words {
		w = strings.TrimSpace(w)
		if w == "" || len(s) < len(w) || !strings.EqualFold(s[:len(w)], w) {
			continue
		}
		if rest := s[len(w):]; rest == "" {
			return true
		} else if r, _ := utf8.DecodeRuneInString(rest); !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// isColon reports the colon and its look-alikes.
func isColon(r rune) bool {
	switch r {
	case ':', '：', '﹕', '꞉', '∶', '˸', '᠄', '︓', '׃', '܃', '܄':
		return true
	}
	return false
}
