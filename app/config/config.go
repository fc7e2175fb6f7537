// Package config resolves Kimi's deployment settings.
//
// Precedence is flags > environment (KIMI_*) > defaults. Every secret can also
// be given as a file through <NAME>_FILE (the Docker/systemd credentials
// convention); setting both is an error, and the file's trailing newline is
// trimmed. Secret flags only ever take a file path, so a secret never lands in
// shell history or the process list.
//
// Runtime-editable configuration (guild documents, modules, accounts) lives in
// the database, not here: this package holds only what is needed to start.
package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults of the deployment settings.
const (
	DefaultDataDir = "./kimi-data"
	// DefaultDemoDataDir is the data directory of demo mode when none is set, so a demo never
	// shares the real appliance's database.
	DefaultDemoDataDir = "./kimi-demo-data"
	DefaultAddr        = "127.0.0.1:8080"
	// DefaultDemoAddr is demo mode's listen address when none is set, so a demo and the real
	// appliance (make run) can run side by side.
	DefaultDemoAddr      = "127.0.0.1:8090"
	DefaultLogFormat     = "text"
	DefaultLogLevel      = "info"
	DefaultAdminUsername = "admin"

	// DBFile is the database file name inside the data directory.
	DBFile = "kimi.db"
	// MinMetricsTokenLen is the shortest accepted /metrics bearer token.
	MinMetricsTokenLen = 16
)

// Keys of the settings, as accepted by Bind.
const (
	KeyDataDir        = "data-dir"
	KeyAddr           = "addr"
	KeyBaseURL        = "base-url"
	KeyLogFormat      = "log-format"
	KeyLogLevel       = "log-level"
	KeyTrustedProxies = "trusted-proxies"
	KeyMetricsToken   = "metrics-token"
	KeyAdminUsername  = "admin-username"
	KeyAdminPassword  = "admin-password"
	KeyDiscordToken   = "discord-token"

	KeyLLMBaseURL = "llm-base-url"
	KeyLLMModel   = "llm-model"
	KeyLLMAPIKey  = "llm-api-key"

	KeyStaffUserIDs   = "staff-user-ids"
	KeyStaffRoleIDs   = "staff-role-ids"
	KeyRegularRoleIDs = "regular-role-ids"
	KeyOwnerUserID    = "owner-user-id"

	KeyModules = "modules"

	KeyDemo           = "demo"
	KeySchedulerLease = "scheduler-lease"

	KeyModuleStartTimeout   = "module-start-timeout"
	KeyModuleGoroutineLimit = "module-goroutine-limit"
	KeyDiscordReadyWait     = "discord-ready-wait"
)

// Module goroutine limit bounds (KIMI_MODULE_GOROUTINE_LIMIT): a module
// running more goroutines is marked degraded.
const (
	DefaultModuleGoroutineLimit = 10000
	MinModuleGoroutineLimit     = 100
	MaxModuleGoroutineLimit     = 1000000
)

// Module start timeout bounds (KIMI_MODULE_START_TIMEOUT; the original's
// MODULE_START_TIMEOUT_SECONDS, 60 s).
const (
	DefaultModuleStartTimeout = 60 * time.Second
	MinModuleStartTimeout     = time.Second
	MaxModuleStartTimeout     = 10 * time.Minute
)

// Discord ready wait bounds (KIMI_DISCORD_READY_WAIT): how long the modules
// wait for the gateway's first READY before they start anyway.
const (
	DefaultDiscordReadyWait = 30 * time.Second
	MaxDiscordReadyWait     = 5 * time.Minute
)

// Scheduler lease bounds (KIMI_SCHEDULER_LEASE).
const (
	DefaultSchedulerLease = 60 * time.Second
	MinSchedulerLease     = time.Second
	MaxSchedulerLease     = time.Hour
)

// MaxModules bounds the names KIMI_MODULES may list.
const MaxModules = 256

// MaxTrustListEntries bounds each trust id list, as guild documents bound
// theirs (sdk.MaxGuildSettingListEntries).
const MaxTrustListEntries = 512

// Setting describes one deployment setting: where it comes from and its default.
type Setting struct {
	Key     string // stable identifier, also the flag name (secrets: Key+"-file")
	Env     string // environment variable
	Default string // default value ("" = none)
	Secret  bool   // also read from Env+"_FILE"; the flag takes a file path
	Bool    bool   // a switch: the flag takes no value (--demo), the variable true or false
	Usage   string // one-line description
}

// Flag is the command-line flag of the setting.
func (s Setting) Flag() string {
	if s.Secret {
		return s.Key + "-file"
	}
	return s.Key
}

// FileEnv is the *_FILE environment variable of a secret ("" for non-secrets).
func (s Setting) FileEnv() string {
	if s.Secret {
		return s.Env + "_FILE"
	}
	return ""
}

var settings = []Setting{
	{Key: KeyDataDir, Env: "KIMI_DATA_DIR", Default: DefaultDataDir, Usage: "data directory (the database and its backups; locked while Kimi uses it)"},
	{Key: KeyAddr, Env: "KIMI_ADDR", Default: DefaultAddr, Usage: "listen address host:port of the admin UI"},
	{Key: KeyBaseURL, Env: "KIMI_BASE_URL", Usage: "public URL of the admin UI (default http://<addr>); https enables Secure cookies"},
	{Key: KeyLogFormat, Env: "KIMI_LOG_FORMAT", Default: DefaultLogFormat, Usage: "log format: text or json"},
	{Key: KeyLogLevel, Env: "KIMI_LOG_LEVEL", Default: DefaultLogLevel, Usage: "log level: debug, info, warn or error"},
	{Key: KeyTrustedProxies, Env: "KIMI_TRUSTED_PROXIES", Usage: "comma-separated IP addresses or CIDRs of the reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed, e.g. 127.0.0.1,::1"},
	{Key: KeyMetricsToken, Env: "KIMI_METRICS_TOKEN", Secret: true, Usage: "bearer token that lets scrapers read /metrics (without one, /metrics needs an admin session)"},
	{Key: KeyAdminUsername, Env: "KIMI_ADMIN_USERNAME", Default: DefaultAdminUsername, Usage: "username of the admin created on first start without the setup page"},
	{Key: KeyAdminPassword, Env: "KIMI_ADMIN_PASSWORD", Secret: true, Usage: "password of the admin created on first start without the setup page"},
	{Key: KeyDiscordToken, Env: "KIMI_DISCORD_TOKEN", Secret: true, Usage: "Discord bot token, overriding the one saved on /discord (the \"Bot \" prefix is optional)"},
	{Key: KeyLLMBaseURL, Env: "KIMI_LLM_BASE_URL", Usage: "base URL of the OpenAI-compatible model provider, overriding the one saved on /assistant (e.g. https://api.moonshot.ai/v1)"},
	{Key: KeyLLMModel, Env: "KIMI_LLM_MODEL", Usage: "model id sent to the provider, overriding the one saved on /assistant"},
	{Key: KeyLLMAPIKey, Env: "KIMI_LLM_API_KEY", Secret: true, Usage: "API key of the model provider, overriding the one saved on /assistant"},
	{Key: KeyStaffUserIDs, Env: "KIMI_STAFF_USER_IDS", Usage: "Discord user ids that are staff in every guild (comma-separated)"},
	{Key: KeyStaffRoleIDs, Env: "KIMI_STAFF_ROLE_IDS", Usage: "Discord role ids whose members are staff in every guild (comma-separated)"},
	{Key: KeyRegularRoleIDs, Env: "KIMI_REGULAR_ROLE_IDS", Usage: "Discord role ids whose members are regulars in every guild (comma-separated)"},
	{Key: KeyOwnerUserID, Env: "KIMI_OWNER_USER_ID", Usage: "Discord user id of the bot owner (not implicitly staff)"},
	{Key: KeyModules, Env: "KIMI_MODULES", Usage: "comma-separated names of the modules to run, overriding the selection saved on /modules"},
	{Key: KeySchedulerLease, Env: "KIMI_SCHEDULER_LEASE", Default: "60s", Usage: "lease of a running scheduled job and of the scheduler runner (1s..1h): how long a killed process's jobs, or a second process, wait"},
	{Key: KeyModuleStartTimeout, Env: "KIMI_MODULE_START_TIMEOUT", Default: "60s", Usage: "how long a module's start may take (1s..10m) before it is marked failed; the admin stays up meanwhile"},
	{Key: KeyModuleGoroutineLimit, Env: "KIMI_MODULE_GOROUTINE_LIMIT", Default: "10000", Usage: "how many goroutines a module may run (100..1000000) before it is marked degraded"},
	{Key: KeyDiscordReadyWait, Env: "KIMI_DISCORD_READY_WAIT", Default: "30s", Usage: "how long the modules wait for Discord's first READY before they start anyway (0s..5m; without a token they start at once)"},
	{Key: KeyDemo, Env: "KIMI_DEMO", Default: "false", Bool: true, Usage: "demo mode: run against a built-in fake Discord with a seeded demo guild, never the real Discord (data in " + DefaultDemoDataDir + " unless the data directory is set, listening on " + DefaultDemoAddr + " unless the address is set)"},
}

// Settings lists every deployment setting in display order.
func Settings() []Setting { return append([]Setting(nil), settings...) }

func lookup(key string) (Setting, bool) {
	for _, s := range settings {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

// Config is the resolved, validated set of deployment settings.
type Config struct {
	DataDir   string     // cleaned path of the data directory
	Addr      string     // listen address host:port (port 0 = any free port)
	BaseURL   string     // public URL without trailing slash; "" = derive from the listen address
	LogFormat string     // "text" or "json"
	LogLevel  slog.Level // minimum log level
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (single addresses as /32 or /128).
	TrustedProxies []netip.Prefix
	MetricsToken   Secret // optional bearer token for /metrics
	AdminUsername  string // username for headless bootstrap
	AdminPassword  Secret // headless bootstrap password ("" = use the setup page)
	// DiscordToken is KIMI_DISCORD_TOKEN(_FILE): the bot token, without a
	// "Bot " prefix, overriding the one stored on /discord ("" = stored).
	DiscordToken Secret

	// LLMBaseURL, LLMModel and LLMAPIKey are KIMI_LLM_BASE_URL,
	// KIMI_LLM_MODEL and KIMI_LLM_API_KEY(_FILE): the model provider's
	// primary endpoint, overriding what /assistant saved ("" = stored).
	LLMBaseURL string
	LLMModel   string
	LLMAPIKey  Secret

	// Trust lists that apply in every guild (a guild's document can add to
	// them, never remove) and the bot owner (0 = none).
	StaffUserIDs   []uint64
	StaffRoleIDs   []uint64
	RegularRoleIDs []uint64
	OwnerUserID    uint64

	// Modules is KIMI_MODULES: the module names to run, in request order,
	// overriding the selection stored in the database when ModulesSet.
	// Duplicates are kept for the host's preflight to refuse by name.
	Modules    []string
	ModulesSet bool

	// SchedulerLease is KIMI_SCHEDULER_LEASE: how long a job claim and the
	// single-runner lease last (renewed at half of it).
	SchedulerLease time.Duration
	// ModuleStartTimeout is KIMI_MODULE_START_TIMEOUT: how long each
	// module's start (and migrations) may take before it is marked failed.
	ModuleStartTimeout time.Duration
	// ModuleGoroutineLimit is KIMI_MODULE_GOROUTINE_LIMIT: a module running
	// more goroutines is marked degraded.
	ModuleGoroutineLimit int
	// DiscordReadyWait is KIMI_DISCORD_READY_WAIT: how long the module host
	// waits for the bot's first READY before starting the modules anyway.
	DiscordReadyWait time.Duration
	// Demo is demo mode (--demo, KIMI_DEMO=true): a built-in fake Discord, never the real one.
	Demo bool

	// Origins records where each setting came from ("--addr", "KIMI_ADDR",
	// "KIMI_ADDR_FILE" or "default"), keyed by Setting.Key.
	Origins map[string]string
}

// DBPath is the path of the database file.
func (c Config) DBPath() string { return filepath.Join(c.DataDir, DBFile) }

// ResolveBaseURL returns the configured base URL or derives one from the
// address the server actually listens on (so port 0 yields the real port).
// Wildcard hosts become localhost, the address a local browser can open.
func (c Config) ResolveBaseURL(listenAddr string) string {
	if c.BaseURL != "" {
		return c.BaseURL
	}
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return "http://" + listenAddr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Error is an invalid setting. Its message names the flag or variable that
// supplied the bad value, e.g.
// `config: KIMI_LOG_LEVEL: "loud" is not one of debug, info, warn, error`.
type Error struct {
	Source string // "--log-level", "KIMI_LOG_LEVEL", "KIMI_METRICS_TOKEN_FILE", ...
	Msg    string
}

// Error renders the problem prefixed with the setting's source.
func (e *Error) Error() string { return "config: " + e.Source + ": " + e.Msg }

var _ error = (*Error)(nil)

// Env is where Load reads the environment and secret files; tests replace it.
type Env struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// OSEnv reads the real process environment and file system.
func OSEnv() Env { return Env{Getenv: os.Getenv, ReadFile: os.ReadFile} }

// Flags are the settings bound to a flag set. Create with Bind, call
// fs.Parse, then Load.
type Flags struct {
	fs   *flag.FlagSet
	vals map[string]*string // by Setting.Key
}

// Bind registers flags for the given setting keys on fs (all settings when
// none are given). Settings without a flag are still read from the
// environment by Load.
func Bind(fs *flag.FlagSet, keys ...string) *Flags {
	if len(keys) == 0 {
		for _, s := range settings {
			keys = append(keys, s.Key)
		}
	}
	f := &Flags{fs: fs, vals: make(map[string]*string, len(keys))}
	for _, k := range keys {
		s, ok := lookup(k)
		if !ok {
			panic("config: Bind: unknown setting " + strconv.Quote(k))
		}
		usage := s.Usage + " (env " + s.Env
		if s.Secret {
			usage = "file holding the " + s.Usage + " (env " + s.Env + " or " + s.FileEnv()
		}
		usage += ")"
		def := s.Default
		if s.Secret {
			def = ""
		}
		if s.Bool {
			v := def
			f.vals[k] = &v
			fs.Var((*boolFlag)(&v), s.Flag(), usage)
			continue
		}
		f.vals[k] = fs.String(s.Flag(), def, usage)
	}
	return f
}

// boolFlag is a switch flag (--demo, --demo=false) stored as the string Load parses.
type boolFlag string

func (b *boolFlag) String() string {
	if b == nil {
		return ""
	}
	return string(*b)
}

func (b *boolFlag) Set(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return errors.New("not true or false")
	}
	*b = boolFlag(v)
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (b *boolFlag) IsBoolFlag() bool { return true }

// Load resolves every setting (flags > environment > defaults) and validates
// it. All problems are reported together, one line each.
func (f *Flags) Load(env Env) (Config, error) {
	explicit := map[string]bool{}
	if f != nil && f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { explicit[fl.Name] = true })
	}
	r := resolver{env: env, flags: f, explicit: explicit, cfg: Config{Origins: map[string]string{}}}
	r.resolve()
	return r.cfg, errors.Join(r.errs...)
}

// Load resolves the settings from the environment and defaults only.
func Load(env Env) (Config, error) { return (*Flags)(nil).Load(env) }

type resolver struct {
	env      Env
	flags    *Flags
	explicit map[string]bool
	cfg      Config
	errs     []error
}

func (r *resolver) fail(source, format string, args ...any) {
	r.errs = append(r.errs, &Error{Source: source, Msg: fmt.Sprintf(format, args...)})
}

// raw returns the value of a plain setting and the name of its source.
func (r *resolver) raw(s Setting) (value, source string) {
	if r.flags != nil {
		if p, ok := r.flags.vals[s.Key]; ok && r.explicit[s.Flag()] {
			return *p, "--" + s.Flag()
		}
	}
	if v := r.env.Getenv(s.Env); v != "" {
		return v, s.Env
	}
	return s.Default, "default"
}

// secret returns the value of a secret setting from its file flag, its
// variable or its *_FILE variable.
func (r *resolver) secret(s Setting) (value, source string, ok bool) {
	if r.flags != nil {
		if p, bound := r.flags.vals[s.Key]; bound && r.explicit[s.Flag()] {
			return r.readSecretFile("--"+s.Flag(), *p)
		}
	}
	direct, file := r.env.Getenv(s.Env), r.env.Getenv(s.FileEnv())
	switch {
	case direct != "" && file != "":
		r.fail(s.Env, "both %s and %s are set; use one", s.Env, s.FileEnv())
		return "", s.Env, false
	case file != "":
		return r.readSecretFile(s.FileEnv(), file)
	case direct != "":
		return direct, s.Env, true
	}
	return "", "default", true
}

func (r *resolver) readSecretFile(source, path string) (string, string, bool) {
	if path == "" {
		r.fail(source, "file path is empty")
		return "", source, false
	}
	b, err := r.env.ReadFile(path)
	if err != nil {
		r.fail(source, "cannot read secret file: %v", err)
		return "", source, false
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		r.fail(source, "secret file %s is empty", path)
		return "", source, false
	}
	return v, source, true
}

func (r *resolver) resolve() {
	c := &r.cfg
	get := func(key string) (string, string) {
		s, _ := lookup(key)
		v, src := r.raw(s)
		c.Origins[key] = src
		return v, src
	}

	if v, src := get(KeyDemo); v != "" {
		if on, err := strconv.ParseBool(v); err != nil {
			r.fail(src, "%q is not true or false", v)
		} else {
			c.Demo = on
		}
	}
	if v, src := get(KeyDataDir); strings.TrimSpace(v) == "" {
		r.fail(src, "must not be empty")
	} else if strings.ContainsRune(v, 0) {
		r.fail(src, "must not contain NUL bytes")
	} else {
		if c.Demo && src == "default" {
			v = DefaultDemoDataDir
		}
		c.DataDir = filepath.Clean(v)
	}

	if v, src := get(KeyAddr); validAddr(v) {
		if c.Demo && src == "default" {
			v = DefaultDemoAddr
		}
		c.Addr = v
	} else {
		r.fail(src, "%q is not a host:port listen address (e.g. 127.0.0.1:8080)", v)
	}

	if v, src := get(KeyBaseURL); v != "" {
		if u, msg := normalizeBaseURL(v); msg != "" {
			r.fail(src, "%q %s", v, msg)
		} else {
			c.BaseURL = u
		}
	}

	if v, src := get(KeyLogFormat); v == "text" || v == "json" {
		c.LogFormat = v
	} else {
		r.fail(src, "%q is not one of text, json", v)
	}

	v, src := get(KeyLogLevel)
	if lv, ok := levels[v]; ok {
		c.LogLevel = lv
	} else {
		r.fail(src, "%q is not one of debug, info, warn, error", v)
	}

	if v := r.env.Getenv(removedTrustProxyEnv); v != "" {
		r.fail(removedTrustProxyEnv, "was replaced by KIMI_TRUSTED_PROXIES: list the addresses of your reverse proxies instead, e.g. KIMI_TRUSTED_PROXIES=127.0.0.1,::1, and unset KIMI_TRUST_PROXY")
	}
	if v, src := get(KeyTrustedProxies); v != "" {
		if ps, msg := parseTrustedProxies(v); msg != "" {
			r.fail(src, "%s", msg)
		} else {
			c.TrustedProxies = ps
		}
	}

	if v, src := get(KeyAdminUsername); strings.TrimSpace(v) == "" {
		r.fail(src, "must not be empty")
	} else if strings.IndexFunc(v, isControl) >= 0 {
		r.fail(src, "must not contain control characters")
	} else {
		c.AdminUsername = strings.TrimSpace(v)
	}

	for _, l := range []struct {
		key  string
		dest *[]uint64
	}{{KeyStaffUserIDs, &c.StaffUserIDs}, {KeyStaffRoleIDs, &c.StaffRoleIDs}, {KeyRegularRoleIDs, &c.RegularRoleIDs}} {
		v, src := get(l.key)
		ids, msg := parseIDList(v)
		if msg != "" {
			r.fail(src, "%s", msg)
			continue
		}
		*l.dest = ids
	}

	if v, src := get(KeyOwnerUserID); strings.TrimSpace(v) != "" {
		if id, ok := parseID(strings.TrimSpace(v)); ok {
			c.OwnerUserID = id
		} else {
			r.fail(src, "%q is not a Discord id (1-20 digits, not 0)", v)
		}
	}

	if v, src := get(KeyModules); src != "default" {
		if names, msg := parseModuleList(v); msg != "" {
			r.fail(src, "%s", msg)
		} else {
			c.Modules, c.ModulesSet = names, true
		}
	}

	duration := func(key string, def, lo, hi time.Duration, bounds string) time.Duration {
		v, src := get(key)
		if strings.TrimSpace(v) == "" {
			return def
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			setting, _ := lookup(key)
			r.fail(src, "%q is not a duration (e.g. %s)", v, setting.Default)
		case d < lo || d > hi:
			r.fail(src, "%s is outside %s", d, bounds)
		default:
			return d
		}
		return def
	}
	c.SchedulerLease = duration(KeySchedulerLease, DefaultSchedulerLease, MinSchedulerLease, MaxSchedulerLease, "1s..1h")
	c.ModuleStartTimeout = duration(KeyModuleStartTimeout, DefaultModuleStartTimeout, MinModuleStartTimeout, MaxModuleStartTimeout, "1s..10m")
	c.ModuleGoroutineLimit = DefaultModuleGoroutineLimit
	if v, src := get(KeyModuleGoroutineLimit); strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
			r.fail(src, "%q is not a whole number (e.g. %d)", v, DefaultModuleGoroutineLimit)
		case n < MinModuleGoroutineLimit || n > MaxModuleGoroutineLimit:
			r.fail(src, "%d is outside %d..%d", n, MinModuleGoroutineLimit, MaxModuleGoroutineLimit)
		default:
			c.ModuleGoroutineLimit = n
		}
	}
	c.DiscordReadyWait = duration(KeyDiscordReadyWait, DefaultDiscordReadyWait, 0, MaxDiscordReadyWait, "0s..5m")

	s, _ := lookup(KeyMetricsToken)
	if v, src, ok := r.secret(s); ok {
		c.Origins[s.Key] = src
		switch {
		case v == "":
		case len(v) < MinMetricsTokenLen:
			r.fail(src, "must be at least %d characters", MinMetricsTokenLen)
		case strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
			r.fail(src, "must not contain spaces or control characters")
		default:
			c.MetricsToken = Secret(v)
		}
	}

	s, _ = lookup(KeyAdminPassword)
	if v, src, ok := r.secret(s); ok {
		c.Origins[s.Key] = src
		c.AdminPassword = Secret(v) // strength is checked by auth when it is used
	}

	s, _ = lookup(KeyDiscordToken)
	if v, src, ok := r.secret(s); ok {
		c.Origins[s.Key] = src
		v = strings.TrimSpace(v)
		if len(v) > 4 && strings.EqualFold(v[:4], "bot ") {
			v = strings.TrimSpace(v[4:])
		}
		switch {
		case v == "":
		case strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
			r.fail(src, "must not contain spaces, control or non-ASCII characters (paste the bot token alone)")
		default:
			c.DiscordToken = Secret(v)
		}
	}
	r.resolveLLM(get)
}

// removedTrustProxyEnv is the boolean setting KIMI_TRUSTED_PROXIES replaced:
// it trusted every loopback or private peer, and through such a peer the
// client-written leftmost X-Forwarded-For entry. Setting it is an error, so
// nobody is left believing a proxy is configured when none is.
const removedTrustProxyEnv = "KIMI_TRUST_PROXY"

// parseTrustedProxies reads a comma-separated list of IP addresses and
// CIDRs. It returns a message naming the first bad entry.
func parseTrustedProxies(v string) ([]netip.Prefix, string) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Sprintf("%q has an empty entry; separate addresses with single commas", v)
		}
		if strings.Contains(entry, "/") {
			p, err := netip.ParsePrefix(entry)
			switch {
			case err != nil || p.Addr().Zone() != "":
				return nil, fmt.Sprintf("%q is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)", entry)
			case p != p.Masked():
				return nil, fmt.Sprintf("%q has bits set past its prefix length; did you mean %s?", entry, p.Masked())
			}
			if p.Addr().Is4In6() && p.Bits() < 96 {
				return nil, fmt.Sprintf("%q mixes IPv4-mapped and other IPv6 addresses; list them separately", entry)
			}
			out = append(out, netip.PrefixFrom(p.Addr().Unmap(), unmappedBits(p)))
			continue
		}
		a, err := netip.ParseAddr(entry)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Sprintf("%q is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)", entry)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, ""
}

// unmappedBits is p's prefix length once an IPv4-mapped address is
// unmapped (::ffff:10.0.0.0/104 is 10.0.0.0/8).
func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return p.Bits() - 96
	}
	return p.Bits()
}

// parseIDList reads a list of Discord ids separated by commas and/or
// spaces; an empty value is an empty list. It returns a message for the
// first bad entry.
func parseIDList(v string) ([]uint64, string) {
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) > MaxTrustListEntries {
		return nil, fmt.Sprintf("has %d ids, more than %d", len(fields), MaxTrustListEntries)
	}
	var ids []uint64
	for _, f := range fields {
		id, ok := parseID(f)
		if !ok {
			return nil, fmt.Sprintf("%q is not a Discord id (1-20 digits, not 0)", f)
		}
		ids = append(ids, id)
	}
	return ids, ""
}

// moduleNameRE is sdk's module-name rule (config does not import the SDK).
var moduleNameRE = regexp.MustCompile(`\A[a-z][a-z0-9_-]{0,63}\z`)

// parseModuleList splits KIMI_MODULES at commas, trimming spaces. Every
// entry must be a module name; duplicates are left for preflight.
func parseModuleList(v string) ([]string, string) {
	parts := strings.Split(v, ",")
	if len(parts) > MaxModules {
		return nil, fmt.Sprintf("lists %d modules, more than %d", len(parts), MaxModules)
	}
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, "has an empty module name (a stray comma?)"
		}
		if !moduleNameRE.MatchString(p) {
			return nil, fmt.Sprintf("%q is not a module name (a lowercase letter, then up to 63 of a-z 0-9 _ -)", p)
		}
		names = append(names, p)
	}
	return names, ""
}

// parseID accepts 1-20 ASCII digits (no sign) that fit 64 bits and are not 0.
func parseID(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil && id > 0
}

func formatIDs(ids []uint64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// levels maps the accepted KIMI_LOG_LEVEL values to slog levels.
var levels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

func isControl(r rune) bool { return r < ' ' || r == 0x7f }

func validAddr(v string) bool {
	host, port, err := net.SplitHostPort(v)
	if err != nil || strings.ContainsAny(host, " /") {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}

// validPort accepts an absent port or a decimal port 1-65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// normalizeBaseURL validates a public base URL and strips its trailing slash.
// It returns a non-empty message when the URL is unusable.
func normalizeBaseURL(v string) (string, string) {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", "is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "must start with http:// or https://"
	case u.Hostname() == "":
		return "", "has no host"
	case strings.HasSuffix(u.Host, ":") || !validPort(u.Port()):
		return "", "has an invalid port (1-65535)"
	case u.User != nil:
		return "", "must not contain credentials"
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(v, "?") || strings.HasSuffix(v, "#"):
		return "", "must not have a query or fragment"
	case u.Path != "" && u.Path != "/":
		return "", "must not have a path (Kimi is served at the root of its host)"
	}
	host := u.Host
	if (u.Scheme == "https" && u.Port() == "443") || (u.Scheme == "http" && u.Port() == "80") {
		// Browsers omit the default port from Origin; so must the trusted origin.
		host = strings.TrimSuffix(host, ":"+u.Port())
	}
	return u.Scheme + "://" + host, ""
}

// UnknownEnv returns KIMI_* variables in environ (os.Environ form) that are
// not settings, sorted: usually typos worth reporting.
func UnknownEnv(environ []string) []string {
	known := map[string]bool{removedTrustProxyEnv: true} // refused by Load with its own message
	for _, s := range settings {
		known[s.Env] = true
		if s.Secret {
			known[s.FileEnv()] = true
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "KIMI_") && !known[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
