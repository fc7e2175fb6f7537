// Package app composes the appliance and implements the `kimi` command line.
// `kimi serve` is an ordered list of parts (serve.go starts the store,
// parts.go builds the rest and lists them in start order; see
// docs/architecture.md): the package only calls constructors, it imports
// neither discordgo nor database/sql. cmd/kimi is a thin main that calls
// Main; a custom build calls Main the same way, or MainWith to hook into
// serve (Extensions).
package app

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/admin"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/buildinfo"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Exit codes of the kimi command.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and failed (or doctor found problems)
	ExitUsage   = 2 // bad command line or invalid settings
)

// errUsage marks an error in how the command was invoked; Main exits 2.
var errUsage = errors.New("usage")

// usageError wraps a message as a usage error.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// cli carries the process environment of one Main call. Tests build it
// directly to inject the environment and standard input.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            config.Env
	environ        func() []string
	// stdinTerminal reports whether stdin is an interactive terminal (for the
	// password prompt); readPassword reads a line from it without echo.
	stdinTerminal func() bool
	readPassword  func() (string, error)
	started       time.Time
	// specs are the modules compiled into this binary.
	specs []sdk.Spec
	// onDemoFake, when set (tests), is called in demo mode with the
	// built-in fake Discord and its seeded demo guild, before the bot
	// connects: a test seeds more of the fake's model and drives it.
	onDemoFake func(*fakediscord.Server, fakediscord.DemoGuild)
	// onDemoModel, when set (tests), is called in demo mode with the
	// scripted demo model before the bot connects: a test scripts its steps
	// (SetSteps) and reads the requests it recorded.
	onDemoModel func(*llmfake.Server)
	// onParts and onReady, when set (RunEmbedded), are called with the
	// built parts' operator services and, once serve is ready, its URL.
	onParts func(EmbeddedParts)
	onReady func(url string)
	// hostNow, when set (RunEmbedded), is the module host's clock;
	// egressRoutes and egressRoots its modules' test HTTP servers.
	hostNow      func() time.Time
	egressRoutes map[string]netip.AddrPort
	egressRoots  *x509.CertPool
	quickStop    bool // the bot's QuickStop
	// assistantStall, when set (tests), is the model client's stall
	// timeout instead of llm.DefaultStallTimeout.
	assistantStall time.Duration
	// demoConfiguredProvider, when set (tests), makes demo mode's assistant
	// use the provider saved on /assistant — the real llm.Chain through the
	// egress transport, as outside demo mode — instead of the scripted demo
	// model (which still runs, for onDemoModel): a test points the settings
	// at a fake model on loopback with the private-network switch on.
	demoConfiguredProvider bool
	// assistantClock, when set (tests), is the clock of the assistant's
	// turns (their status throttle, deadline and tool timings) instead of
	// the wall clock.
	assistantClock assistant.Clock
	// onServe is Extensions.OnServe.
	onServe func(context.Context, ServeParts)
	// resultsLease is Extensions.ResultsLease.
	resultsLease time.Duration
}

// command is one `kimi` subcommand.
type command struct {
	name     string
	synopsis string // one line for the command list
	usage    string // argument summary after the name
	help     string // longer description for -h
	run      func(ctx context.Context, c *cli, args []string) error
}

func commands() []command {
	return []command{
		{name: "serve", synopsis: "run the appliance (default when no command is given)", usage: "[flags]", help: serveHelp, run: runServe},
		{name: "migrate", synopsis: "show or apply database migrations", usage: "status|up [flags]", help: migrateHelp, run: runMigrate},
		{name: "backup", synopsis: "write a consistent copy of the database while it runs", usage: "[flags] FILE", help: backupHelp, run: runBackup},
		{name: "restore", synopsis: "replace the database with a verified backup (server stopped)", usage: "[flags] FILE", help: restoreHelp, run: runRestore},
		{name: "doctor", synopsis: "check database integrity, libc pin, settings and permissions", usage: "[flags]", help: doctorHelp, run: runDoctor},
		{name: "admin", synopsis: "create an admin or reset an admin's password", usage: "create|reset-password [flags]", help: adminHelp, run: runAdmin},
		{name: "version", synopsis: "print version, commit, Go version and build date", usage: "", help: "Print the build information of this binary.", run: runVersion},
	}
}

func findCommand(name string) (command, bool) {
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd, true
		}
	}
	return command{}, false
}

// Main runs the kimi command line with args (without the program name) and
// returns the process exit code: 0 on success, 1 when the command failed, 2
// for a bad command line or invalid settings. `kimi serve` returns when ctx is
// cancelled or on SIGINT/SIGTERM, after a graceful shutdown.
//
// specs are the modules compiled into this binary; a custom build passes its
// own list (see README "Custom builds").
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, specs ...sdk.Spec) int {
	return MainWith(ctx, args, stdout, stderr, Extensions{Specs: specs})
}

// Extensions is what a custom build adds to the stock appliance: its
// modules and a hook into `kimi serve` (README "Custom builds").
type Extensions struct {
	// Specs are the modules compiled into this binary.
	Specs []sdk.Spec
	// OnServe, when set, is called once by `kimi serve` after the modules
	// started, as the scheduled-results part starts, before its dispatcher: a
	// producer of scheduled results calls p.Results.SetProducer and may
	// start goroutines bound to ctx, which ends when serve shuts down
	// (before the outbox, the modules and the store close). It must not
	// block.
	OnServe func(ctx context.Context, p ServeParts)
	// ResultsLease, when positive, replaces the scheduled-results lease
	// (results.Lease, 60 s): a test build shortens it so that a delivery
	// cut short by kill -9 is claimed again within seconds of a restart.
	ResultsLease time.Duration
	// OnDemoFake, when set, is called by `kimi serve --demo` with the
	// built-in fake Discord and its seeded demo guild, before the bot
	// connects. It is for test builds (cmd/kimi's crash tests): they
	// observe what "Discord" received (fakediscord's OnMessageCreate) or
	// seed more of the fake's model. It must not block.
	OnDemoFake func(*fakediscord.Server, fakediscord.DemoGuild)
	// OnDemoModel, when set, is called by `kimi serve --demo` with the
	// scripted demo model (the assistant's provider in demo mode) before
	// the bot connects. It is for test builds: cmd/kimi's assistant crash
	// test scripts it (SetSteps) so that a turn stalls mid-turn. It must not
	// block.
	OnDemoModel func(*llmfake.Server)
}

// ServeParts are the running appliance's parts that OnServe receives.
type ServeParts struct {
	// Store is the appliance's database (migrated).
	Store *store.Store
	// Results is the scheduled-results outbox: SetProducer before it
	// starts, Enqueue inside the producer's write transaction.
	Results *results.Service
	// Logger is the root logger (add a component of your own).
	Logger *slog.Logger
}

// MainWith is Main for a custom build that needs more than its module
// list: ext adds the modules and the serve hook.
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, ext Extensions) int {
	c := &cli{
		stdin:         os.Stdin,
		stdout:        stdout,
		stderr:        stderr,
		env:           config.OSEnv(),
		environ:       os.Environ,
		stdinTerminal: func() bool { return isTerminal(os.Stdin) },
		readPassword:  func() (string, error) { return readPasswordNoEcho(os.Stdin) },
		started:       time.Now(),
		specs:         ext.Specs,
		onServe:       ext.OnServe,
		resultsLease:  ext.ResultsLease,
		onDemoFake:    ext.OnDemoFake,
		onDemoModel:   ext.OnDemoModel,
	}
	return c.main(ctx, args)
}

func (c *cli) main(ctx context.Context, args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		c.printCommands(c.stdout)
		return ExitOK
	}
	name, rest := "serve", args // flags alone (`kimi --addr :9000`) mean serve
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	if name == "help" {
		if len(rest) == 0 {
			c.printCommands(c.stdout)
			return ExitOK
		}
		name, rest = rest[0], []string{"-h"}
	}
	cmd, ok := findCommand(name)
	if !ok {
		fmt.Fprintf(c.stderr, "kimi: unknown command %q\nRun 'kimi help' for the list of commands.\n", name)
		return ExitUsage
	}
	err := cmd.run(ctx, c, rest)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(c.stderr, "kimi %s: %s\nRun 'kimi %s -h' for usage.\n", cmd.name, strings.TrimPrefix(err.Error(), errUsage.Error()+": "), cmd.name)
		return ExitUsage
	case isConfigError(err):
		fmt.Fprintln(c.stderr, err)
		return ExitUsage
	default:
		fmt.Fprintf(c.stderr, "kimi %s: %v\n", cmd.name, err)
		return ExitFailure
	}
}

func isConfigError(err error) bool {
	var ce *config.Error
	return errors.As(err, &ce)
}

func (c *cli) printCommands(w io.Writer) {
	fmt.Fprintf(w, "kimi %s: a self-hosted Discord assistant appliance\n\nUsage:\n  kimi [command] [flags]\n\nCommands:\n", buildinfo.Get().Version)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", cmd.name, cmd.synopsis)
	}
	fmt.Fprintf(w, "\nRun 'kimi <command> -h' for a command's flags. Settings are read from flags, then\nKIMI_* environment variables, then defaults:\n\n")
	printSettings(w)
}

func printSettings(w io.Writer) {
	for _, s := range config.Settings() {
		env := s.Env
		if s.Secret {
			env += " / " + s.FileEnv()
		}
		def := s.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(w, "  %-48s --%-21s default %s\n", env, s.Flag(), def)
	}
}

// newFlagSet returns a flag set whose -h output names the command and lists
// its flags; parse errors are reported by Main, not by the flag package.
func (c *cli) newFlagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("kimi "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args allowing flags after positional arguments
// (`kimi backup FILE --force`), prints help on -h, and returns the
// positional arguments.
func (c *cli) parse(fs *flag.FlagSet, cmd command, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printUsage(fs, cmd)
				return nil, err
			}
			return nil, usageError("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// parseFlagsOnly parses the flags of a command that takes no positional
// arguments.
func (c *cli) parseFlagsOnly(fs *flag.FlagSet, name string, args []string) error {
	cmd, _ := findCommand(name)
	pos, err := c.parse(fs, cmd, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("unexpected argument %q", pos[0])
	}
	return nil
}

func (c *cli) printUsage(fs *flag.FlagSet, cmd command) {
	w := c.stdout
	fmt.Fprintf(w, "Usage: kimi %s %s\n\n%s\n", cmd.name, cmd.usage, strings.TrimSpace(cmd.help))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// loadConfig resolves the settings bound to fs after parsing.
func (c *cli) loadConfig(f *config.Flags) (config.Config, error) {
	return f.Load(c.env)
}

func runVersion(_ context.Context, c *cli, args []string) error {
	if err := c.parseFlagsOnly(c.newFlagSet("version"), "version", args); err != nil {
		return err
	}
	bi := buildinfo.Get()
	commit := bi.Commit
	if bi.Modified {
		commit += " (modified)"
	}
	fmt.Fprintf(c.stdout, "kimi %s\ncommit: %s\nbuilt:  %s\ngo:     %s\n", bi.Version, commit, bi.Date, bi.GoVersion)
	return nil
}

// moduleInfos validates the compiled-in module specs (each valid, names
// unique) and summarises them for the admin overview.
func moduleInfos(specs []sdk.Spec) ([]admin.ModuleInfo, error) {
	seen := make(map[string]bool, len(specs))
	out := make([]admin.ModuleInfo, 0, len(specs))
	for _, sp := range specs {
		if err := sp.Validate(); err != nil {
			return nil, fmt.Errorf("app: module %q: %w", sp.Name, err)
		}
		if seen[sp.Name] {
			return nil, fmt.Errorf("app: module %q is registered twice", sp.Name)
		}
		seen[sp.Name] = true
		out = append(out, admin.ModuleInfo{Name: sp.Name, Version: sp.Version})
	}
	return out, nil
}
