package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// Secret is a sensitive string. Its String, GoString, LogValue and MarshalText
// forms are redacted so it cannot leak through fmt or slog; use Reveal.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String redacts the value (empty stays empty so "unset" remains visible).
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString redacts the value for %#v.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// LogValue redacts the value in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText redacts the value in JSON and text encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

var _ slog.LogValuer = Secret("")

// String renders the settings with secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("data-dir=%q addr=%q base-url=%q log-format=%s log-level=%s trusted-proxies=%q metrics-token=%q admin-username=%q admin-password=%q staff-user-ids=%s staff-role-ids=%s regular-role-ids=%s owner-user-id=%d modules=%s demo=%t",
		c.DataDir, c.Addr, c.BaseURL, c.LogFormat, levelName(c.LogLevel), c.trustedProxies(), c.MetricsToken.String(), c.AdminUsername, c.AdminPassword.String(),
		formatIDs(c.StaffUserIDs), formatIDs(c.StaffRoleIDs), formatIDs(c.RegularRoleIDs), c.OwnerUserID, c.modules(), c.Demo)
}

// LogValue renders the settings as a slog group with secrets redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("data_dir", c.DataDir),
		slog.String("addr", c.Addr),
		slog.String("base_url", c.BaseURL),
		slog.String("log_format", c.LogFormat),
		slog.String("log_level", levelName(c.LogLevel)),
		slog.String("trusted_proxies", c.trustedProxies()),
		slog.Bool("metrics_token_set", c.MetricsToken != ""),
		slog.String("admin_username", c.AdminUsername),
		slog.Bool("admin_password_set", c.AdminPassword != ""),
		slog.Bool("discord_token_set", c.DiscordToken != ""),
		slog.String("staff_user_ids", formatIDs(c.StaffUserIDs)),
		slog.String("staff_role_ids", formatIDs(c.StaffRoleIDs)),
		slog.String("regular_role_ids", formatIDs(c.RegularRoleIDs)),
		slog.Uint64("owner_user_id", c.OwnerUserID),
		slog.String("modules", c.modules()),
		slog.Duration("scheduler_lease", c.SchedulerLease),
		slog.Duration("module_start_timeout", c.ModuleStartTimeout),
		slog.Int("module_goroutine_limit", c.ModuleGoroutineLimit),
		slog.Duration("discord_ready_wait", c.DiscordReadyWait),
		slog.Bool("demo", c.Demo),
	)
}

var _ slog.LogValuer = Config{}

// modules renders KIMI_MODULES: "stored" when unset (the database's
// selection applies), else the names.
func (c Config) modules() string {
	if !c.ModulesSet {
		return "stored"
	}
	return "[" + strings.Join(c.Modules, ",") + "]"
}

func levelName(l slog.Level) string { return strings.ToLower(l.String()) }

// trustedProxies renders TrustedProxies as the setting is written.
func (c Config) trustedProxies() string {
	parts := make([]string, len(c.TrustedProxies))
	for i, p := range c.TrustedProxies {
		if p.IsSingleIP() {
			parts[i] = p.Addr().String()
		} else {
			parts[i] = p.String()
		}
	}
	return strings.Join(parts, ",")
}
