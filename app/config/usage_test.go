package config

import (
	"flag"
	"io"
	"testing"
)

// TestFlagUsageReadsAsASentence pins the help text of every flag, as
// `kimi serve -h` prints it: secrets read "file holding the <noun phrase>",
// so a Usage must be a noun phrase (it once printed "file holding the
// creates the admin on first start…").
func TestFlagUsageReadsAsASentence(t *testing.T) {
	want := map[string]string{
		"data-dir":               "data directory (the database and its backups; locked while Kimi uses it) (env KIMI_DATA_DIR)",
		"addr":                   "listen address host:port of the admin UI (env KIMI_ADDR)",
		"base-url":               "public URL of the admin UI (default http://<addr>); https enables Secure cookies (env KIMI_BASE_URL)",
		"log-format":             "log format: text or json (env KIMI_LOG_FORMAT)",
		"log-level":              "log level: debug, info, warn or error (env KIMI_LOG_LEVEL)",
		"trusted-proxies":        "comma-separated IP addresses or CIDRs of the reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed, e.g. 127.0.0.1,::1 (env KIMI_TRUSTED_PROXIES)",
		"metrics-token-file":     "file holding the bearer token that lets scrapers read /metrics (without one, /metrics needs an admin session) (env KIMI_METRICS_TOKEN or KIMI_METRICS_TOKEN_FILE)",
		"admin-username":         "username of the admin created on first start without the setup page (env KIMI_ADMIN_USERNAME)",
		"discord-token-file":     "file holding the Discord bot token, overriding the one saved on /discord (the \"Bot \" prefix is optional) (env KIMI_DISCORD_TOKEN or KIMI_DISCORD_TOKEN_FILE)",
		"llm-base-url":           "base URL of the OpenAI-compatible model provider, overriding the one saved on /assistant (e.g. https://api.moonshot.ai/v1) (env KIMI_LLM_BASE_URL)",
		"llm-model":              "model id sent to the provider, overriding the one saved on /assistant (env KIMI_LLM_MODEL)",
		"llm-api-key-file":       "file holding the API key of the model provider, overriding the one saved on /assistant (env KIMI_LLM_API_KEY or KIMI_LLM_API_KEY_FILE)",
		"admin-password-file":    "file holding the password of the admin created on first start without the setup page (env KIMI_ADMIN_PASSWORD or KIMI_ADMIN_PASSWORD_FILE)",
		"staff-user-ids":         "Discord user ids that are staff in every guild (comma-separated) (env KIMI_STAFF_USER_IDS)",
		"staff-role-ids":         "Discord role ids whose members are staff in every guild (comma-separated) (env KIMI_STAFF_ROLE_IDS)",
		"regular-role-ids":       "Discord role ids whose members are regulars in every guild (comma-separated) (env KIMI_REGULAR_ROLE_IDS)",
		"owner-user-id":          "Discord user id of the bot owner (not implicitly staff) (env KIMI_OWNER_USER_ID)",
		"modules":                "comma-separated names of the modules to run, overriding the selection saved on /modules (env KIMI_MODULES)",
		"scheduler-lease":        "lease of a running scheduled job and of the scheduler runner (1s..1h): how long a killed process's jobs, or a second process, wait (env KIMI_SCHEDULER_LEASE)",
		"module-start-timeout":   "how long a module's start may take (1s..10m) before it is marked failed; the admin stays up meanwhile (env KIMI_MODULE_START_TIMEOUT)",
		"module-goroutine-limit": "how many goroutines a module may run (100..1000000) before it is marked degraded (env KIMI_MODULE_GOROUTINE_LIMIT)",
		"discord-ready-wait":     "how long the modules wait for Discord's first READY before they start anyway (0s..5m; without a token they start at once) (env KIMI_DISCORD_READY_WAIT)",
		"demo":                   "demo mode: run against a built-in fake Discord with a seeded demo guild, never the real Discord (data in ./kimi-demo-data unless the data directory is set, listening on 127.0.0.1:8090 unless the address is set) (env KIMI_DEMO)",
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Bind(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("flag --%s has no pinned help text: add it here", f.Name)
			return
		}
		if f.Usage != w {
			t.Errorf("--%s help:\n got %q\nwant %q", f.Name, f.Usage, w)
		}
	})
	if n != len(want) {
		t.Errorf("%d flags bound, %d pinned", n, len(want))
	}
}
