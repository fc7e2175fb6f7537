package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/settings"
)

// Environment variables that override the stored token.
const (
	EnvToken     = "KIMI_DISCORD_TOKEN"
	EnvTokenFile = "KIMI_DISCORD_TOKEN_FILE"
)

// Token sources, as the /discord page names them.
const (
	TokenFromEnv     = EnvToken
	TokenFromFile    = EnvTokenFile
	TokenFromStore   = "stored"
	TokenFromNowhere = ""
)

// ErrTokenConflict is returned when both KIMI_DISCORD_TOKEN and
// KIMI_DISCORD_TOKEN_FILE are set.
var ErrTokenConflict = errors.New("discord: set KIMI_DISCORD_TOKEN or KIMI_DISCORD_TOKEN_FILE, not both")

// EnvTokenValue reads the token override: KIMI_DISCORD_TOKEN, or the
// trimmed contents of the file KIMI_DISCORD_TOKEN_FILE names; "" when
// neither is set. readFile nil means os.ReadFile. The "Bot " prefix is
// dropped.
func EnvTokenValue(getenv func(string) string, readFile func(string) ([]byte, error)) (token, source string, err error) {
	if readFile == nil {
		readFile = os.ReadFile
	}
	direct, file := getenv(EnvToken), getenv(EnvTokenFile)
	switch {
	case direct != "" && file != "":
		return "", "", ErrTokenConflict
	case direct != "":
		return settings.NormalizeDiscordToken(direct), TokenFromEnv, nil
	case file != "":
		b, err := readFile(file)
		if err != nil {
			return "", "", fmt.Errorf("discord: read %s: %w", EnvTokenFile, err)
		}
		t := settings.NormalizeDiscordToken(string(b))
		if t == "" {
			return "", "", fmt.Errorf("discord: %s names an empty file", EnvTokenFile)
		}
		return t, TokenFromFile, nil
	}
	return "", TokenFromNowhere, nil
}

// ErrTokenRejected is returned by ValidateToken when Discord answers 401.
var ErrTokenRejected = errors.New("discord: Discord rejected the token")

// TokenIdentity is who a token belongs to (users/@me).
type TokenIdentity struct {
	ID, Username string
	Bot          bool
}

// ValidateToken checks token live with GET users/@me, bounded by ctx, over
// the bot's transport (so demo mode and tests reach the fake). A 401 is
// ErrTokenRejected; a user token (not a bot) is refused too. The token is
// never part of an error.
func (b *Bot) ValidateToken(ctx context.Context, token string) (TokenIdentity, error) {
	token = settings.NormalizeDiscordToken(token)
	if msg := settings.DiscordTokenProblem(token); msg != "" {
		return TokenIdentity{}, errors.New("discord: validate token: " + msg)
	}
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return TokenIdentity{}, fmt.Errorf("discord: validate token: %w", err)
	}
	s.Client = &http.Client{Transport: newTransport(b.baseTransport(), nil)}
	s.ShouldRetryOnRateLimit, s.MaxRestRetries = false, 0
	u, err := s.User("@me", requestOptions(ctx)...)
	if err != nil {
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return TokenIdentity{}, ErrTokenRejected
		}
		return TokenIdentity{}, fmt.Errorf("discord: validate token: %s", redact(err.Error(), token))
	}
	if !u.Bot {
		return TokenIdentity{}, errors.New("discord: validate token: this is not a bot token (users/@me is not a bot)")
	}
	return TokenIdentity{ID: u.ID, Username: u.Username, Bot: u.Bot}, nil
}

// redact removes token from s.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[REDACTED]")
}

var osGetenv = os.Getenv
