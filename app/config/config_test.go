package config

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeEnv builds an Env from a map of variables and a map of files.
func fakeEnv(vars, files map[string]string) Env {
	return Env{
		Getenv: func(k string) string { return vars[k] },
		ReadFile: func(p string) ([]byte, error) {
			if v, ok := files[p]; ok {
				return []byte(v), nil
			}
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		},
	}
}

// load parses args into a fresh flag set bound to every setting.
func load(t *testing.T, args []string, vars, files map[string]string) (Config, error) {
	t.Helper()
	fset := flag.NewFlagSet("test", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	f := Bind(fset)
	if err := fset.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f.Load(fakeEnv(vars, files))
}

func TestDefaults(t *testing.T) {
	c, err := load(t, nil, nil, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		DataDir: "kimi-data", Addr: DefaultAddr, LogFormat: "text", LogLevel: slog.LevelInfo,
		AdminUsername: "admin", SchedulerLease: DefaultSchedulerLease,
		ModuleStartTimeout: DefaultModuleStartTimeout, DiscordReadyWait: DefaultDiscordReadyWait,
		ModuleGoroutineLimit: DefaultModuleGoroutineLimit,
	}
	if c.Origins[KeyAddr] != "default" {
		t.Errorf("origin of addr = %q, want default", c.Origins[KeyAddr])
	}
	c.Origins = nil
	if fmt.Sprintf("%#v", c) != fmt.Sprintf("%#v", want) {
		t.Fatalf("defaults = %+v, want %+v", c, want)
	}
	if got := c.DBPath(); got != filepath.Join("kimi-data", "kimi.db") {
		t.Fatalf("DBPath = %q", got)
	}
}

// TestSettings covers every setting: default, environment, flag, precedence
// and invalid values with the exact message.
func TestSettings(t *testing.T) {
	type check func(c Config) string
	field := func(name string, get func(Config) any, want any) check {
		return func(c Config) string {
			if got := get(c); got != want {
				return fmt.Sprintf("%s = %#v, want %#v", name, got, want)
			}
			return ""
		}
	}
	dataDir := func(want string) check { return field("DataDir", func(c Config) any { return c.DataDir }, want) }
	addr := func(want string) check { return field("Addr", func(c Config) any { return c.Addr }, want) }
	baseURL := func(want string) check { return field("BaseURL", func(c Config) any { return c.BaseURL }, want) }
	format := func(want string) check { return field("LogFormat", func(c Config) any { return c.LogFormat }, want) }
	level := func(want slog.Level) check { return field("LogLevel", func(c Config) any { return c.LogLevel }, want) }
	user := func(want string) check {
		return field("AdminUsername", func(c Config) any { return c.AdminUsername }, want)
	}
	token := func(want string) check {
		return field("MetricsToken", func(c Config) any { return c.MetricsToken.Reveal() }, want)
	}
	discord := func(want string) check {
		return field("DiscordToken", func(c Config) any { return c.DiscordToken.Reveal() }, want)
	}
	llmURL := func(want string) check { return field("LLMBaseURL", func(c Config) any { return c.LLMBaseURL }, want) }
	llmModel := func(want string) check { return field("LLMModel", func(c Config) any { return c.LLMModel }, want) }
	llmKey := func(want string) check {
		return field("LLMAPIKey", func(c Config) any { return c.LLMAPIKey.Reveal() }, want)
	}
	password := func(want string) check {
		return field("AdminPassword", func(c Config) any { return c.AdminPassword.Reveal() }, want)
	}
	proxies := func(want string) check {
		return field("TrustedProxies", func(c Config) any {
			parts := make([]string, len(c.TrustedProxies))
			for i, p := range c.TrustedProxies {
				parts[i] = p.String()
			}
			return strings.Join(parts, ",")
		}, want)
	}
	ids := func(name string, get func(Config) []uint64, want []uint64) check {
		return func(c Config) string {
			if got := get(c); fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
				return fmt.Sprintf("%s = %#v, want %#v", name, got, want)
			}
			return ""
		}
	}
	modules := func(set bool, want ...string) check {
		return func(c Config) string {
			if c.ModulesSet != set || fmt.Sprintf("%q", c.Modules) != fmt.Sprintf("%q", want) {
				return fmt.Sprintf("Modules = %q (set %v), want %q (set %v)", c.Modules, c.ModulesSet, want, set)
			}
			return ""
		}
	}
	staffUsers := func(want ...uint64) check {
		return ids("StaffUserIDs", func(c Config) []uint64 { return c.StaffUserIDs }, want)
	}
	staffRoles := func(want ...uint64) check {
		return ids("StaffRoleIDs", func(c Config) []uint64 { return c.StaffRoleIDs }, want)
	}
	regularRoles := func(want ...uint64) check {
		return ids("RegularRoleIDs", func(c Config) []uint64 { return c.RegularRoleIDs }, want)
	}
	owner := func(want uint64) check {
		return field("OwnerUserID", func(c Config) any { return c.OwnerUserID }, want)
	}
	manyIDs := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(i + 1)
		}
		return strings.Join(parts, ",")
	}
	origin := func(key, want string) check {
		return field("Origins["+key+"]", func(c Config) any { return c.Origins[key] }, want)
	}

	const tok = "0123456789abcdef"
	tests := []struct {
		name    string
		args    []string
		vars    map[string]string
		files   map[string]string
		checks  []check
		wantErr string // exact error text when non-empty
	}{
		// data dir
		{name: "data dir env", vars: map[string]string{"KIMI_DATA_DIR": "/srv/kimi/"}, checks: []check{dataDir("/srv/kimi"), origin(KeyDataDir, "KIMI_DATA_DIR")}},
		{name: "data dir flag beats env", args: []string{"--data-dir", "/a"}, vars: map[string]string{"KIMI_DATA_DIR": "/b"}, checks: []check{dataDir("/a"), origin(KeyDataDir, "--data-dir")}},
		{name: "data dir empty flag", args: []string{"--data-dir="}, wantErr: "config: --data-dir: must not be empty"},

		// addr
		{name: "addr env", vars: map[string]string{"KIMI_ADDR": ":9090"}, checks: []check{addr(":9090")}},
		{name: "addr ipv6", vars: map[string]string{"KIMI_ADDR": "[::1]:0"}, checks: []check{addr("[::1]:0")}},
		{name: "addr flag beats env", args: []string{"--addr=0.0.0.0:80"}, vars: map[string]string{"KIMI_ADDR": ":9090"}, checks: []check{addr("0.0.0.0:80"), origin(KeyAddr, "--addr")}},
		{name: "addr without port", vars: map[string]string{"KIMI_ADDR": "localhost"}, wantErr: `config: KIMI_ADDR: "localhost" is not a host:port listen address (e.g. 127.0.0.1:8080)`},
		{name: "addr port out of range", vars: map[string]string{"KIMI_ADDR": "127.0.0.1:70000"}, wantErr: `config: KIMI_ADDR: "127.0.0.1:70000" is not a host:port listen address (e.g. 127.0.0.1:8080)`},
		{name: "addr named port", args: []string{"--addr", "127.0.0.1:http"}, wantErr: `config: --addr: "127.0.0.1:http" is not a host:port listen address (e.g. 127.0.0.1:8080)`},

		// base URL
		{name: "base url default empty", checks: []check{baseURL(""), origin(KeyBaseURL, "default")}},
		{name: "base url trailing slash trimmed", vars: map[string]string{"KIMI_BASE_URL": "https://kimi.example.com/"}, checks: []check{baseURL("https://kimi.example.com")}},
		{name: "base url flag beats env", args: []string{"--base-url", "http://a:1"}, vars: map[string]string{"KIMI_BASE_URL": "http://b:2"}, checks: []check{baseURL("http://a:1")}},
		{name: "base url bad scheme", vars: map[string]string{"KIMI_BASE_URL": "ftp://x"}, wantErr: `config: KIMI_BASE_URL: "ftp://x" must start with http:// or https://`},
		{name: "base url no host", vars: map[string]string{"KIMI_BASE_URL": "https://"}, wantErr: `config: KIMI_BASE_URL: "https://" has no host`},
		{name: "base url path", vars: map[string]string{"KIMI_BASE_URL": "https://x/kimi"}, wantErr: `config: KIMI_BASE_URL: "https://x/kimi" must not have a path (Kimi is served at the root of its host)`},
		{name: "base url query", vars: map[string]string{"KIMI_BASE_URL": "https://x/?a=1"}, wantErr: `config: KIMI_BASE_URL: "https://x/?a=1" must not have a query or fragment`},
		{name: "base url port only", vars: map[string]string{"KIMI_BASE_URL": "https://:443"}, wantErr: `config: KIMI_BASE_URL: "https://:443" has no host`},
		{name: "base url port out of range", vars: map[string]string{"KIMI_BASE_URL": "https://kimi.example.com:99999"}, wantErr: `config: KIMI_BASE_URL: "https://kimi.example.com:99999" has an invalid port (1-65535)`},
		{name: "base url port zero", vars: map[string]string{"KIMI_BASE_URL": "http://kimi.example.com:0"}, wantErr: `config: KIMI_BASE_URL: "http://kimi.example.com:0" has an invalid port (1-65535)`},
		{name: "base url empty port", vars: map[string]string{"KIMI_BASE_URL": "http://kimi.example.com:"}, wantErr: `config: KIMI_BASE_URL: "http://kimi.example.com:" has an invalid port (1-65535)`},
		{name: "base url default https port dropped", vars: map[string]string{"KIMI_BASE_URL": "https://kimi.example.com:443/"}, checks: []check{baseURL("https://kimi.example.com")}},
		{name: "base url default http port dropped", vars: map[string]string{"KIMI_BASE_URL": "http://kimi.example.com:80"}, checks: []check{baseURL("http://kimi.example.com")}},
		{name: "base url other port kept", vars: map[string]string{"KIMI_BASE_URL": "http://kimi.example.com:443"}, checks: []check{baseURL("http://kimi.example.com:443")}},
		{name: "base url ipv6 with port", vars: map[string]string{"KIMI_BASE_URL": "http://[::1]:8080/"}, checks: []check{baseURL("http://[::1]:8080")}},
		{name: "base url credentials", vars: map[string]string{"KIMI_BASE_URL": "https://u:p@x"}, wantErr: `config: KIMI_BASE_URL: "https://u:p@x" must not contain credentials`},

		// log format
		{name: "log format json env", vars: map[string]string{"KIMI_LOG_FORMAT": "json"}, checks: []check{format("json")}},
		{name: "log format flag beats env", args: []string{"--log-format=text"}, vars: map[string]string{"KIMI_LOG_FORMAT": "json"}, checks: []check{format("text")}},
		{name: "log format invalid", vars: map[string]string{"KIMI_LOG_FORMAT": "xml"}, wantErr: `config: KIMI_LOG_FORMAT: "xml" is not one of text, json`},

		// log level
		{name: "log level debug", vars: map[string]string{"KIMI_LOG_LEVEL": "debug"}, checks: []check{level(slog.LevelDebug)}},
		{name: "log level warn", vars: map[string]string{"KIMI_LOG_LEVEL": "warn"}, checks: []check{level(slog.LevelWarn)}},
		{name: "log level error flag beats env", args: []string{"--log-level", "error"}, vars: map[string]string{"KIMI_LOG_LEVEL": "debug"}, checks: []check{level(slog.LevelError)}},
		{name: "log level invalid", vars: map[string]string{"KIMI_LOG_LEVEL": "loud"}, wantErr: `config: KIMI_LOG_LEVEL: "loud" is not one of debug, info, warn, error`},
		{name: "log level invalid flag", args: []string{"--log-level=INFO"}, wantErr: `config: --log-level: "INFO" is not one of debug, info, warn, error`},

		// trusted proxies
		{name: "trusted proxies default none", checks: []check{proxies(""), origin(KeyTrustedProxies, "default")}},
		{name: "trusted proxies env", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "127.0.0.1, ::1,10.0.0.0/8"}, checks: []check{proxies("127.0.0.1/32,::1/128,10.0.0.0/8"), origin(KeyTrustedProxies, "KIMI_TRUSTED_PROXIES")}},
		{name: "trusted proxies flag beats env", args: []string{"--trusted-proxies=192.0.2.10"}, vars: map[string]string{"KIMI_TRUSTED_PROXIES": "10.0.0.0/8"}, checks: []check{proxies("192.0.2.10/32"), origin(KeyTrustedProxies, "--trusted-proxies")}},
		{name: "trusted proxies ipv6 cidr", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "fd00::/8"}, checks: []check{proxies("fd00::/8")}},
		{name: "trusted proxies ipv4-mapped is ipv4", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "::ffff:10.1.2.3,::ffff:10.0.0.0/104"}, checks: []check{proxies("10.1.2.3/32,10.0.0.0/8")}},
		{name: "trusted proxies garbage", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "127.0.0.1,proxy.local"}, wantErr: `config: KIMI_TRUSTED_PROXIES: "proxy.local" is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)`},
		{name: "trusted proxies bad prefix length", args: []string{"--trusted-proxies=10.0.0.0/33"}, wantErr: `config: --trusted-proxies: "10.0.0.0/33" is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)`},
		{name: "trusted proxies host bits", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "10.1.2.3/8"}, wantErr: `config: KIMI_TRUSTED_PROXIES: "10.1.2.3/8" has bits set past its prefix length; did you mean 10.0.0.0/8?`},
		{name: "trusted proxies with port", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "127.0.0.1:8080"}, wantErr: `config: KIMI_TRUSTED_PROXIES: "127.0.0.1:8080" is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)`},
		{name: "trusted proxies zone", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "fe80::1%eth0"}, wantErr: `config: KIMI_TRUSTED_PROXIES: "fe80::1%eth0" is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)`},
		{name: "trusted proxies empty entry", vars: map[string]string{"KIMI_TRUSTED_PROXIES": "127.0.0.1,,::1"}, wantErr: `config: KIMI_TRUSTED_PROXIES: "127.0.0.1,,::1" has an empty entry; separate addresses with single commas`},
		{name: "removed trust proxy refused", vars: map[string]string{"KIMI_TRUST_PROXY": "true"}, wantErr: "config: KIMI_TRUST_PROXY: was replaced by KIMI_TRUSTED_PROXIES: list the addresses of your reverse proxies instead, e.g. KIMI_TRUSTED_PROXIES=127.0.0.1,::1, and unset KIMI_TRUST_PROXY"},
		{name: "removed trust proxy refused even false", vars: map[string]string{"KIMI_TRUST_PROXY": "false", "KIMI_TRUSTED_PROXIES": "127.0.0.1"}, wantErr: "config: KIMI_TRUST_PROXY: was replaced by KIMI_TRUSTED_PROXIES: list the addresses of your reverse proxies instead, e.g. KIMI_TRUSTED_PROXIES=127.0.0.1,::1, and unset KIMI_TRUST_PROXY"},

		// admin username
		{name: "admin username env", vars: map[string]string{"KIMI_ADMIN_USERNAME": "root"}, checks: []check{user("root")}},
		{name: "admin username flag beats env", args: []string{"--admin-username", "alice"}, vars: map[string]string{"KIMI_ADMIN_USERNAME": "root"}, checks: []check{user("alice")}},
		{name: "admin username blank", args: []string{"--admin-username", "  "}, wantErr: "config: --admin-username: must not be empty"},
		{name: "admin username control", vars: map[string]string{"KIMI_ADMIN_USERNAME": "a\nb"}, wantErr: "config: KIMI_ADMIN_USERNAME: must not contain control characters"},

		// discord token (secret)
		{name: "discord token unset", checks: []check{discord(""), origin(KeyDiscordToken, "default")}},
		{name: "discord token env", vars: map[string]string{"KIMI_DISCORD_TOKEN": "abc.def.ghi"}, checks: []check{discord("abc.def.ghi"), origin(KeyDiscordToken, "KIMI_DISCORD_TOKEN")}},
		{name: "discord token env Bot prefix dropped", vars: map[string]string{"KIMI_DISCORD_TOKEN": "Bot abc.def.ghi"}, checks: []check{discord("abc.def.ghi")}},
		{name: "discord token file trimmed", vars: map[string]string{"KIMI_DISCORD_TOKEN_FILE": "/run/dt"}, files: map[string]string{"/run/dt": "abc.def.ghi\n"}, checks: []check{discord("abc.def.ghi"), origin(KeyDiscordToken, "KIMI_DISCORD_TOKEN_FILE")}},
		{name: "discord token both set", vars: map[string]string{"KIMI_DISCORD_TOKEN": "abc", "KIMI_DISCORD_TOKEN_FILE": "/f"}, wantErr: "config: KIMI_DISCORD_TOKEN: both KIMI_DISCORD_TOKEN and KIMI_DISCORD_TOKEN_FILE are set; use one"},
		{name: "discord token with a space", vars: map[string]string{"KIMI_DISCORD_TOKEN": "abc def"}, wantErr: "config: KIMI_DISCORD_TOKEN: must not contain spaces, control or non-ASCII characters (paste the bot token alone)"},

		// metrics token (secret)
		{name: "metrics token unset", checks: []check{token(""), origin(KeyMetricsToken, "default")}},
		{name: "metrics token env", vars: map[string]string{"KIMI_METRICS_TOKEN": tok}, checks: []check{token(tok), origin(KeyMetricsToken, "KIMI_METRICS_TOKEN")}},
		{name: "metrics token file trims newline", vars: map[string]string{"KIMI_METRICS_TOKEN_FILE": "/run/tok"}, files: map[string]string{"/run/tok": tok + "\r\n"}, checks: []check{token(tok), origin(KeyMetricsToken, "KIMI_METRICS_TOKEN_FILE")}},
		{name: "metrics token flag file beats env", args: []string{"--metrics-token-file", "/f"}, vars: map[string]string{"KIMI_METRICS_TOKEN": "env-token-env-token"}, files: map[string]string{"/f": tok}, checks: []check{token(tok), origin(KeyMetricsToken, "--metrics-token-file")}},
		{name: "metrics token both set", vars: map[string]string{"KIMI_METRICS_TOKEN": tok, "KIMI_METRICS_TOKEN_FILE": "/f"}, wantErr: "config: KIMI_METRICS_TOKEN: both KIMI_METRICS_TOKEN and KIMI_METRICS_TOKEN_FILE are set; use one"},
		{name: "metrics token short", vars: map[string]string{"KIMI_METRICS_TOKEN": "short"}, wantErr: "config: KIMI_METRICS_TOKEN: must be at least 16 characters"},
		{name: "metrics token space", vars: map[string]string{"KIMI_METRICS_TOKEN": "0123456789 abcdef"}, wantErr: "config: KIMI_METRICS_TOKEN: must not contain spaces or control characters"},
		{name: "metrics token missing file", vars: map[string]string{"KIMI_METRICS_TOKEN_FILE": "/nope"}, wantErr: "config: KIMI_METRICS_TOKEN_FILE: cannot read secret file: open /nope: file does not exist"},
		{name: "metrics token empty file", vars: map[string]string{"KIMI_METRICS_TOKEN_FILE": "/e"}, files: map[string]string{"/e": "\n"}, wantErr: "config: KIMI_METRICS_TOKEN_FILE: secret file /e is empty"},

		// the model provider's overrides
		{name: "llm unset", checks: []check{llmURL(""), llmModel(""), llmKey(""), origin(KeyLLMAPIKey, "default")}},
		{name: "llm base url env, trailing slash dropped", vars: map[string]string{"KIMI_LLM_BASE_URL": "https://api.moonshot.ai/v1/"}, checks: []check{llmURL("https://api.moonshot.ai/v1"), origin(KeyLLMBaseURL, "KIMI_LLM_BASE_URL")}},
		{name: "llm base url local", vars: map[string]string{"KIMI_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}, checks: []check{llmURL("http://127.0.0.1:11434/v1")}},
		{name: "llm base url with credentials", vars: map[string]string{"KIMI_LLM_BASE_URL": "https://u:p@api.example/v1"}, wantErr: "config: KIMI_LLM_BASE_URL: must not contain a user name or password (give the key in KIMI_LLM_API_KEY)"},
		{name: "llm base url not http", vars: map[string]string{"KIMI_LLM_BASE_URL": "ftp://api.example/v1"}, wantErr: "config: KIMI_LLM_BASE_URL: must start with http:// or https:// (e.g. https://api.moonshot.ai/v1)"},
		{name: "llm base url with a query", vars: map[string]string{"KIMI_LLM_BASE_URL": "https://api.example/v1?x=1"}, wantErr: "config: KIMI_LLM_BASE_URL: must not have a query or fragment"},
		{name: "llm model env", vars: map[string]string{"KIMI_LLM_MODEL": " kimi-k2.6 "}, checks: []check{llmModel("kimi-k2.6"), origin(KeyLLMModel, "KIMI_LLM_MODEL")}},
		{name: "llm model with a space", vars: map[string]string{"KIMI_LLM_MODEL": "kimi k2"}, wantErr: "config: KIMI_LLM_MODEL: must not contain spaces, control or non-ASCII characters (a model id such as the provider's /models lists)"},
		{name: "llm key env", vars: map[string]string{"KIMI_LLM_API_KEY": "sk-test"}, checks: []check{llmKey("sk-test"), origin(KeyLLMAPIKey, "KIMI_LLM_API_KEY")}},
		{name: "llm key file trimmed", vars: map[string]string{"KIMI_LLM_API_KEY_FILE": "/run/k"}, files: map[string]string{"/run/k": "sk-file\n"}, checks: []check{llmKey("sk-file"), origin(KeyLLMAPIKey, "KIMI_LLM_API_KEY_FILE")}},
		{name: "llm key flag file", args: []string{"--llm-api-key-file=/k"}, files: map[string]string{"/k": "sk-flag"}, checks: []check{llmKey("sk-flag"), origin(KeyLLMAPIKey, "--llm-api-key-file")}},
		{name: "llm key both set", vars: map[string]string{"KIMI_LLM_API_KEY": "sk", "KIMI_LLM_API_KEY_FILE": "/k"}, wantErr: "config: KIMI_LLM_API_KEY: both KIMI_LLM_API_KEY and KIMI_LLM_API_KEY_FILE are set; use one"},
		{name: "llm key with a space", vars: map[string]string{"KIMI_LLM_API_KEY": "sk a"}, wantErr: "config: KIMI_LLM_API_KEY: must not contain spaces, control or non-ASCII characters (paste the API key alone)"},

		// admin password (secret)
		{name: "admin password env", vars: map[string]string{"KIMI_ADMIN_PASSWORD": "correct horse"}, checks: []check{password("correct horse")}},
		{name: "admin password file keeps inner newline", vars: map[string]string{"KIMI_ADMIN_PASSWORD_FILE": "/p"}, files: map[string]string{"/p": "a\nb\n\n"}, checks: []check{password("a\nb")}},
		{name: "admin password flag file", args: []string{"--admin-password-file=/p"}, files: map[string]string{"/p": "s3cret pass\n"}, checks: []check{password("s3cret pass")}},
		{name: "admin password both set", vars: map[string]string{"KIMI_ADMIN_PASSWORD": "x", "KIMI_ADMIN_PASSWORD_FILE": "/p"}, wantErr: "config: KIMI_ADMIN_PASSWORD: both KIMI_ADMIN_PASSWORD and KIMI_ADMIN_PASSWORD_FILE are set; use one"},
		{name: "admin password empty flag path", args: []string{"--admin-password-file="}, wantErr: "config: --admin-password-file: file path is empty"},

		// trust lists and the owner
		{name: "trust lists unset", checks: []check{staffUsers(), staffRoles(), regularRoles(), owner(0)}},
		{name: "staff user ids", vars: map[string]string{"KIMI_STAFF_USER_IDS": "1,18446744073709551615"}, checks: []check{staffUsers(1, 18446744073709551615), origin(KeyStaffUserIDs, "KIMI_STAFF_USER_IDS")}},
		{name: "staff role ids with spaces", vars: map[string]string{"KIMI_STAFF_ROLE_IDS": " 10, 20 ,30 "}, checks: []check{staffRoles(10, 20, 30)}},
		{name: "regular role ids flag beats env", args: []string{"--regular-role-ids", "5"}, vars: map[string]string{"KIMI_REGULAR_ROLE_IDS": "6"}, checks: []check{regularRoles(5), origin(KeyRegularRoleIDs, "--regular-role-ids")}},
		{name: "512 ids", vars: map[string]string{"KIMI_STAFF_ROLE_IDS": manyIDs(512)}, checks: []check{func(c Config) string {
			if len(c.StaffRoleIDs) != 512 {
				return fmt.Sprintf("%d ids", len(c.StaffRoleIDs))
			}
			return ""
		}}},
		{name: "513 ids", vars: map[string]string{"KIMI_STAFF_ROLE_IDS": manyIDs(513)}, wantErr: "config: KIMI_STAFF_ROLE_IDS: has 513 ids, more than 512"},
		{name: "signed id", vars: map[string]string{"KIMI_STAFF_USER_IDS": "1,-2"}, wantErr: `config: KIMI_STAFF_USER_IDS: "-2" is not a Discord id (1-20 digits, not 0)`},
		{name: "plus id", vars: map[string]string{"KIMI_REGULAR_ROLE_IDS": "+2"}, wantErr: `config: KIMI_REGULAR_ROLE_IDS: "+2" is not a Discord id (1-20 digits, not 0)`},
		{name: "id past 64 bits", vars: map[string]string{"KIMI_STAFF_ROLE_IDS": "18446744073709551616"}, wantErr: `config: KIMI_STAFF_ROLE_IDS: "18446744073709551616" is not a Discord id (1-20 digits, not 0)`},
		{name: "zero id", vars: map[string]string{"KIMI_STAFF_ROLE_IDS": "0"}, wantErr: `config: KIMI_STAFF_ROLE_IDS: "0" is not a Discord id (1-20 digits, not 0)`},
		{name: "name instead of id", vars: map[string]string{"KIMI_STAFF_ROLE_IDS": "Moderators"}, wantErr: `config: KIMI_STAFF_ROLE_IDS: "Moderators" is not a Discord id (1-20 digits, not 0)`},
		{name: "owner", vars: map[string]string{"KIMI_OWNER_USER_ID": "42"}, checks: []check{owner(42), staffUsers()}},
		{name: "owner flag", args: []string{"--owner-user-id=43"}, checks: []check{owner(43), origin(KeyOwnerUserID, "--owner-user-id")}},
		{name: "owner list refused", vars: map[string]string{"KIMI_OWNER_USER_ID": "1,2"}, wantErr: `config: KIMI_OWNER_USER_ID: "1,2" is not a Discord id (1-20 digits, not 0)`},
		{name: "owner zero", vars: map[string]string{"KIMI_OWNER_USER_ID": "0"}, wantErr: `config: KIMI_OWNER_USER_ID: "0" is not a Discord id (1-20 digits, not 0)`},

		{name: "modules unset", checks: []check{modules(false), origin(KeyModules, "default")}},
		{name: "modules", vars: map[string]string{"KIMI_MODULES": " hello, reference_kudos ,my-mod"}, checks: []check{modules(true, "hello", "reference_kudos", "my-mod")}},
		{name: "modules flag", args: []string{"--modules=hello"}, checks: []check{modules(true, "hello"), origin(KeyModules, "--modules")}},
		{name: "modules duplicates kept for preflight", vars: map[string]string{"KIMI_MODULES": "hello,hello"}, checks: []check{modules(true, "hello", "hello")}},
		{name: "scheduler lease", vars: map[string]string{"KIMI_SCHEDULER_LEASE": "2s"}, checks: []check{func(c Config) string {
			if c.SchedulerLease.String() != "2s" {
				return "lease = " + c.SchedulerLease.String()
			}
			return ""
		}}},
		{name: "scheduler lease not a duration", vars: map[string]string{"KIMI_SCHEDULER_LEASE": "soon"}, wantErr: `config: KIMI_SCHEDULER_LEASE: "soon" is not a duration (e.g. 60s)`},
		{name: "scheduler lease too short", vars: map[string]string{"KIMI_SCHEDULER_LEASE": "10ms"}, wantErr: "config: KIMI_SCHEDULER_LEASE: 10ms is outside 1s..1h"},
		{name: "module start timeout", vars: map[string]string{"KIMI_MODULE_START_TIMEOUT": "3s"}, checks: []check{func(c Config) string {
			if c.ModuleStartTimeout != 3*time.Second {
				return "module start timeout = " + c.ModuleStartTimeout.String()
			}
			return ""
		}}},
		{name: "module start timeout flag", args: []string{"--module-start-timeout=2m"}, checks: []check{origin(KeyModuleStartTimeout, "--module-start-timeout"), func(c Config) string {
			if c.ModuleStartTimeout != 2*time.Minute {
				return "module start timeout = " + c.ModuleStartTimeout.String()
			}
			return ""
		}}},
		{name: "module start timeout not a duration", vars: map[string]string{"KIMI_MODULE_START_TIMEOUT": "60"}, wantErr: `config: KIMI_MODULE_START_TIMEOUT: "60" is not a duration (e.g. 60s)`},
		{name: "module start timeout too short", vars: map[string]string{"KIMI_MODULE_START_TIMEOUT": "500ms"}, wantErr: "config: KIMI_MODULE_START_TIMEOUT: 500ms is outside 1s..10m"},
		{name: "module start timeout too long", vars: map[string]string{"KIMI_MODULE_START_TIMEOUT": "11m"}, wantErr: "config: KIMI_MODULE_START_TIMEOUT: 11m0s is outside 1s..10m"},
		{name: "module goroutine limit", vars: map[string]string{"KIMI_MODULE_GOROUTINE_LIMIT": "500"}, checks: []check{func(c Config) string {
			if c.ModuleGoroutineLimit != 500 {
				return "module goroutine limit = " + strconv.Itoa(c.ModuleGoroutineLimit)
			}
			return ""
		}}},
		{name: "module goroutine limit flag", args: []string{"--module-goroutine-limit=20000"}, checks: []check{origin(KeyModuleGoroutineLimit, "--module-goroutine-limit"), func(c Config) string {
			if c.ModuleGoroutineLimit != 20000 {
				return "module goroutine limit = " + strconv.Itoa(c.ModuleGoroutineLimit)
			}
			return ""
		}}},
		{name: "module goroutine limit not a number", vars: map[string]string{"KIMI_MODULE_GOROUTINE_LIMIT": "lots"}, wantErr: `config: KIMI_MODULE_GOROUTINE_LIMIT: "lots" is not a whole number (e.g. 10000)`},
		{name: "module goroutine limit too low", vars: map[string]string{"KIMI_MODULE_GOROUTINE_LIMIT": "99"}, wantErr: "config: KIMI_MODULE_GOROUTINE_LIMIT: 99 is outside 100..1000000"},
		{name: "module goroutine limit too high", vars: map[string]string{"KIMI_MODULE_GOROUTINE_LIMIT": "1000001"}, wantErr: "config: KIMI_MODULE_GOROUTINE_LIMIT: 1000001 is outside 100..1000000"},
		{name: "discord ready wait zero starts the modules at once", vars: map[string]string{"KIMI_DISCORD_READY_WAIT": "0s"}, checks: []check{func(c Config) string {
			if c.DiscordReadyWait != 0 {
				return "discord ready wait = " + c.DiscordReadyWait.String()
			}
			return ""
		}}},
		{name: "discord ready wait negative", vars: map[string]string{"KIMI_DISCORD_READY_WAIT": "-1s"}, wantErr: "config: KIMI_DISCORD_READY_WAIT: -1s is outside 0s..5m"},
		{name: "discord ready wait not a duration", vars: map[string]string{"KIMI_DISCORD_READY_WAIT": "later"}, wantErr: `config: KIMI_DISCORD_READY_WAIT: "later" is not a duration (e.g. 30s)`},
		{name: "modules stray comma", vars: map[string]string{"KIMI_MODULES": "hello,"}, wantErr: "config: KIMI_MODULES: has an empty module name (a stray comma?)"},
		{name: "modules bad name", vars: map[string]string{"KIMI_MODULES": "Hello"}, wantErr: `config: KIMI_MODULES: "Hello" is not a module name (a lowercase letter, then up to 63 of a-z 0-9 _ -)`},
		{name: "modules too many", vars: map[string]string{"KIMI_MODULES": strings.Repeat("a,", 256) + "a"}, wantErr: "config: KIMI_MODULES: lists 257 modules, more than 256"},

		// several problems are reported together, one line each
		{name: "two problems", vars: map[string]string{"KIMI_LOG_LEVEL": "loud", "KIMI_LOG_FORMAT": "xml"},
			wantErr: "config: KIMI_LOG_FORMAT: \"xml\" is not one of text, json\nconfig: KIMI_LOG_LEVEL: \"loud\" is not one of debug, info, warn, error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.args, tt.vars, tt.files)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Load succeeded with %s, want error %q", c, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Fatalf("error = %q\nwant    %q", err.Error(), tt.wantErr)
				}
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("error %v is not a *config.Error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, chk := range tt.checks {
				if msg := chk(c); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func TestEnvOnlyLoadIgnoresUnboundFlags(t *testing.T) {
	fset := flag.NewFlagSet("admin", flag.ContinueOnError)
	f := Bind(fset, KeyDataDir)
	if fset.Lookup("addr") != nil {
		t.Fatal("Bind(KeyDataDir) registered --addr")
	}
	if err := fset.Parse([]string{"--data-dir", "/x"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Load(fakeEnv(map[string]string{"KIMI_ADDR": ":1234"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/x" || c.Addr != ":1234" {
		t.Fatalf("got data dir %q addr %q", c.DataDir, c.Addr)
	}
	c, err = Load(fakeEnv(map[string]string{"KIMI_DATA_DIR": "/env"}, nil))
	if err != nil || c.DataDir != "/env" {
		t.Fatalf("Load(env) = %q, %v", c.DataDir, err)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	const pw, tok = "hunter2-hunter2", "tok-0123456789abcdef"
	const llmKey = "sk-llm-secret-0123"
	c, err := load(t, nil, map[string]string{"KIMI_ADMIN_PASSWORD": pw, "KIMI_METRICS_TOKEN": tok, "KIMI_LLM_API_KEY": llmKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	for _, h := range []slog.Handler{slog.NewTextHandler(&logged, nil), slog.NewJSONHandler(&logged, nil)} {
		slog.New(h).Info("config", "config", c, "pw", c.AdminPassword)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	renderings := map[string]string{
		"String": c.String(), "%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c),
		"%#v": fmt.Sprintf("%#v", c), "slog": logged.String(), "json": string(js),
	}
	for name, s := range renderings {
		if strings.Contains(s, pw) || strings.Contains(s, tok) || strings.Contains(s, llmKey) {
			t.Errorf("%s leaks a secret: %s", name, s)
		}
	}
	if !strings.Contains(c.String(), `admin-password="[redacted]"`) {
		t.Errorf("String() does not show the redacted password: %s", c.String())
	}
	if c.AdminPassword.Reveal() != pw {
		t.Errorf("Reveal() = %q", c.AdminPassword.Reveal())
	}
	if Secret("").String() != "" {
		t.Error("an empty secret must render empty so 'unset' stays visible")
	}
}

func TestResolveBaseURL(t *testing.T) {
	tests := []struct {
		base, listen, want string
	}{
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"", "0.0.0.0:43211", "http://localhost:43211"},
		{"", "[::]:80", "http://localhost:80"},
		{"", "[::1]:9000", "http://[::1]:9000"},
		{"", ":8080", "http://localhost:8080"},
		{"https://kimi.example.com", "127.0.0.1:8080", "https://kimi.example.com"},
	}
	for _, tt := range tests {
		c := Config{BaseURL: tt.base}
		if got := c.ResolveBaseURL(tt.listen); got != tt.want {
			t.Errorf("ResolveBaseURL(%q) with base %q = %q, want %q", tt.listen, tt.base, got, tt.want)
		}
	}
}

func TestSecretFileFromDisk(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(p, []byte("from-disk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Env{Getenv: func(k string) string {
		if k == "KIMI_ADMIN_PASSWORD_FILE" {
			return p
		}
		return ""
	}, ReadFile: os.ReadFile})
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminPassword.Reveal() != "from-disk" {
		t.Fatalf("password = %q", c.AdminPassword.Reveal())
	}
}

func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{"KIMI_ADDR=x", "KIMI_LOG_LEVL=debug", "HOME=/root", "KIMI_ADMIN_PASSWORD_FILE=/p", "KIMI_DATADIR=/d"})
	want := []string{"KIMI_DATADIR", "KIMI_LOG_LEVL"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("UnknownEnv = %v, want %v", got, want)
	}
}

func TestSettingsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Settings() {
		if seen[s.Env] || !strings.HasPrefix(s.Env, "KIMI_") || s.Usage == "" {
			t.Errorf("bad setting %+v", s)
		}
		seen[s.Env] = true
		if s.Secret && (s.Flag() != s.Key+"-file" || s.FileEnv() != s.Env+"_FILE") {
			t.Errorf("secret %s: flag %q file env %q", s.Key, s.Flag(), s.FileEnv())
		}
	}
	if len(seen) != 23 {
		t.Fatalf("%d settings, want 23", len(seen))
	}
}
