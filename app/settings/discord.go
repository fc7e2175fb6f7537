package settings

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/store"
)

// Keys of the Discord settings in the store's settings table. The token is
// a secret setting (left out of a backup without secrets); module storage
// cannot read kimi_ tables at all.
const (
	SettingDiscordToken          = "discord.token"
	SettingDiscordMembers        = "discord.intents.members"
	SettingDiscordMessageContent = "discord.intents.message_content"
	SettingDiscordCacheMessages  = "discord.cache.messages"
	SettingDiscordCacheMembers   = "discord.cache.members"
)

// Audit actions of the Discord settings; their details never hold the token.
const (
	AuditActionDiscordToken     = "discord.token"
	AuditActionDiscordIntents   = "discord.intents"
	AuditActionDiscordCache     = "discord.cache"
	AuditActionDiscordReconnect = "discord.reconnect"
)

// Field names of the Discord settings (the keys of Error.Fields and the
// /discord forms' field names).
const (
	FieldDiscordToken         = "token"
	FieldDiscordCacheMessages = "cache_messages"
	FieldDiscordCacheMembers  = "cache_members"
)

// Bounds of the Discord settings.
const (
	MaxDiscordTokenBytes = 256
	MaxCacheMessages     = 100_000
	MaxCacheMembers      = 1_000_000
)

// Discord is the stored Discord configuration. The token is a secret:
// printed with %v or slog it shows only as set or not set.
type Discord struct {
	Token          string
	Members        bool
	MessageContent bool
	CacheMessages  int // 0: the default
	CacheMembers   int // 0: the default
}

// String describes the settings without the token.
func (d Discord) String() string {
	return fmt.Sprintf("settings.Discord{token set: %t, members: %t, message content: %t, cache: %d messages, %d members}",
		d.Token != "", d.Members, d.MessageContent, d.CacheMessages, d.CacheMembers)
}

// GoString is String, so %#v does not print the token either.
func (d Discord) GoString() string { return d.String() }

// LogValue keeps the token out of slog output.
func (d Discord) LogValue() slog.Value {
	return slog.GroupValue(slog.Bool("token_set", d.Token != ""), slog.Bool("members", d.Members),
		slog.Bool("message_content", d.MessageContent), slog.Int("cache_messages", d.CacheMessages), slog.Int("cache_members", d.CacheMembers))
}

var (
	_ fmt.Stringer   = Discord{}
	_ fmt.GoStringer = Discord{}
	_ slog.LogValuer = Discord{}
)

// NormalizeDiscordToken trims a pasted token and drops a leading "Bot "
// (the form Discord's Authorization header uses).
func NormalizeDiscordToken(raw string) string {
	t := strings.TrimSpace(raw)
	if len(t) > 4 && strings.EqualFold(t[:4], "bot ") {
		t = strings.TrimSpace(t[4:])
	}
	return t
}

// DiscordTokenProblem returns an operator-facing sentence for a token that
// cannot be one (after NormalizeDiscordToken), or "". It never repeats the
// token.
func DiscordTokenProblem(token string) string {
	switch {
	case token == "":
		return "Enter the bot token from the Discord developer portal (Bot → Reset Token)."
	case len(token) > MaxDiscordTokenBytes:
		return fmt.Sprintf("The token is longer than %d bytes. Paste the bot token alone.", MaxDiscordTokenBytes)
	}
	for _, r := range token {
		if r <= ' ' || r > '~' {
			return "The token contains a space, control or non-ASCII character. Paste the bot token alone."
		}
	}
	return ""
}

// LoadDiscord reads the stored Discord settings; nothing stored gives the
// zero Discord and no error.
func LoadDiscord(ctx context.Context, st Store) (Discord, error) {
	d, err := readDiscord(ctx, st.Reader())
	if err != nil {
		return Discord{}, fmt.Errorf("settings: load discord: %w", err)
	}
	return d, nil
}

func readDiscord(ctx context.Context, q querier) (Discord, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM kimi_settings WHERE key IN (?, ?, ?, ?, ?)`,
		SettingDiscordToken, SettingDiscordMembers, SettingDiscordMessageContent, SettingDiscordCacheMessages, SettingDiscordCacheMembers)
	if err != nil {
		return Discord{}, err
	}
	defer rows.Close()
	var d Discord
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return Discord{}, err
		}
		switch k {
		case SettingDiscordToken:
			d.Token = v
		case SettingDiscordMembers:
			d.Members = v == "true"
		case SettingDiscordMessageContent:
			d.MessageContent = v == "true"
		case SettingDiscordCacheMessages:
			d.CacheMessages, _ = strconv.Atoi(v)
		case SettingDiscordCacheMembers:
			d.CacheMembers, _ = strconv.Atoi(v)
		}
	}
	return d, rows.Err()
}

// SaveDiscordToken stores token (normalized; the caller has validated it
// live) as a secret setting with an AuditActionDiscordToken row. An invalid
// token returns a *Error and changes nothing.
func SaveDiscordToken(ctx context.Context, st Store, token string, who Actor) error {
	token = NormalizeDiscordToken(token)
	if msg := DiscordTokenProblem(token); msg != "" {
		return &Error{Fields: map[string]string{FieldDiscordToken: msg}}
	}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readDiscord(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		detail := "bot token set"
		switch {
		case cur.Token == token:
			detail = "bot token saved, unchanged"
		case cur.Token != "":
			detail = "bot token replaced"
		}
		if err := store.SetSecretSettingTx(ctx, tx, SettingDiscordToken, token); err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionDiscordToken, Target: "discord", Detail: detail, IP: who.IP})
	})
	if err != nil {
		return fmt.Errorf("settings: save discord token: %w", err)
	}
	return nil
}

// RemoveDiscordToken deletes the stored token with an audit row and reports
// whether one was stored; removing nothing writes no row.
func RemoveDiscordToken(ctx context.Context, st Store, who Actor) (bool, error) {
	removed := false
	err := st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readDiscord(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		if cur.Token == "" {
			return nil
		}
		if err := store.DeleteSettingTx(ctx, tx, SettingDiscordToken); err != nil {
			return err
		}
		removed = true
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionDiscordToken, Target: "discord", Detail: "bot token removed", IP: who.IP})
	})
	if err != nil {
		return false, fmt.Errorf("settings: remove discord token: %w", err)
	}
	return removed, nil
}

// SaveDiscordIntents stores the privileged-intent choices with an
// AuditActionDiscordIntents row naming them.
func SaveDiscordIntents(ctx context.Context, st Store, members, messageContent bool, who Actor) error {
	err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, kv := range []struct {
			key string
			on  bool
		}{{SettingDiscordMembers, members}, {SettingDiscordMessageContent, messageContent}} {
			if err := store.SetSettingTx(ctx, tx, kv.key, strconv.FormatBool(kv.on)); err != nil {
				return err
			}
		}
		detail := fmt.Sprintf("members intent %s; message content intent %s", onOff(members), onOff(messageContent))
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionDiscordIntents, Target: "discord", Detail: detail, IP: who.IP})
	})
	if err != nil {
		return fmt.Errorf("settings: save discord intents: %w", err)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// CacheProblems checks cache sizes (0 means the default); nil when valid.
func CacheProblems(messages, members int) *Error {
	f := map[string]string{}
	if messages < 0 || messages > MaxCacheMessages {
		f[FieldDiscordCacheMessages] = fmt.Sprintf("Enter a number of messages from 0 (the default) to %d.", MaxCacheMessages)
	}
	if members < 0 || members > MaxCacheMembers {
		f[FieldDiscordCacheMembers] = fmt.Sprintf("Enter a number of members from 0 (the default) to %d.", MaxCacheMembers)
	}
	if len(f) > 0 {
		return &Error{Fields: f}
	}
	return nil
}

// SaveDiscordCache stores the cache sizes with an AuditActionDiscordCache
// row. They take effect at the next start. Invalid sizes return a *Error
// and change nothing.
func SaveDiscordCache(ctx context.Context, st Store, messages, members int, who Actor) error {
	if e := CacheProblems(messages, members); e != nil {
		return e
	}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, kv := range []struct {
			key string
			n   int
		}{{SettingDiscordCacheMessages, messages}, {SettingDiscordCacheMembers, members}} {
			if err := store.SetSettingTx(ctx, tx, kv.key, strconv.Itoa(kv.n)); err != nil {
				return err
			}
		}
		detail := fmt.Sprintf("cache sizes set to %d messages, %d members (0: default; applies at the next start)", messages, members)
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionDiscordCache, Target: "discord", Detail: detail, IP: who.IP})
	})
	if err != nil {
		return fmt.Errorf("settings: save discord cache: %w", err)
	}
	return nil
}
