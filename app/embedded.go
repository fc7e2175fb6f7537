package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/store"
)

// EmbeddedOptions configures RunEmbedded, the appliance in-process that
// package kimitest starts for module authors' tests.
type EmbeddedOptions struct {
	// Env is serve's whole environment (the KIMI_* settings), in place of
	// the process's: appliances side by side in one test binary each have
	// their own.
	Env map[string]string
	// Stdout and Stderr receive what serve writes (its log on Stderr).
	Stdout, Stderr io.Writer
	// Ext is the build: its modules and hooks.
	Ext Extensions
	// OnParts, when set, is called once the appliance's parts are built,
	// before they start, with the services the operator's admin uses. It
	// must not block.
	OnParts func(EmbeddedParts)
	// Now, when set, is the module host's clock (its durable scheduler's:
	// the modules' jobs and the scheduled tasks fall due by it) in place
	// of time.Now; after moving it, call the scheduler's Wake.
	Now func() time.Time
	// HTTPRoutes and HTTPRoots point the modules' declared HTTP hosts at
	// a test's servers (host name → address) and trust their
	// certificates: the modules' egress keeps its rules, caps and checks.
	// Only a test binary may set them: RunEmbedded refuses them elsewhere
	// (ExitUsage), as the egress refuses the routes.
	HTTPRoutes map[string]netip.AddrPort
	HTTPRoots  *x509.CertPool
	// QuickStop makes the stop not wait for discordgo's gateway close (a
	// fixed second's sleep after its close frame), which then finishes in
	// the background after RunEmbedded returned (discord.Bot.QuickStop).
	QuickStop bool
	// ModelStall, when positive, is the assistant's model client's stall
	// timeout (how long a stream may go silent) in place of
	// llm.DefaultStallTimeout: a test of a stalled model takes
	// milliseconds.
	ModelStall time.Duration
	// ConfiguredProvider makes demo mode's assistant use the provider
	// saved in the appliance's settings (/assistant) — the real provider
	// chain through the egress, as outside demo mode — instead of the
	// scripted demo model (which still runs).
	ConfiguredProvider bool
	// AssistantClock, when set, is the clock of the assistant's turns
	// (their status throttle, idle notice, deadline and tool timings) in
	// place of the wall clock.
	AssistantClock assistant.Clock
	// OnReady, when set, is called once serve is ready (every part
	// started: the bot connected, the modules running, the admin
	// listening) with the admin's base URL. It must not block.
	OnReady func(url string)
}

// EmbeddedParts are the services of a running appliance that a test drives
// as its operator would through the admin.
type EmbeddedParts struct {
	Store     *store.Store
	Guilds    *guildcfg.Service
	Host      *host.Host
	Proposals *proposals.Service
	// Discord is the bot (its status, AwaitReady).
	Discord *discord.Bot
}

// RunEmbedded runs `kimi serve` with args in-process, with o's
// environment, until ctx ends, and returns its exit code (as Main).
func RunEmbedded(ctx context.Context, args []string, o EmbeddedOptions) int {
	var environ []string
	for k, v := range o.Env {
		environ = append(environ, k+"="+v)
	}
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if (len(o.HTTPRoutes) > 0 || o.HTTPRoots != nil) && !testing.Testing() {
		fmt.Fprintln(stderr, "kimi: the modules' test HTTP routes and roots are for test binaries only")
		return ExitUsage
	}
	c := &cli{
		stdin:  strings.NewReader(""),
		stdout: stdout, stderr: stderr,
		env: config.Env{
			Getenv:   func(k string) string { return o.Env[k] },
			ReadFile: os.ReadFile,
		},
		environ:       func() []string { return environ },
		stdinTerminal: func() bool { return false },
		readPassword:  func() (string, error) { return "", errors.New("app: no terminal in an embedded appliance") },
		started:       time.Now(),
		specs:         o.Ext.Specs,
		onServe:       o.Ext.OnServe,
		resultsLease:  o.Ext.ResultsLease,
		onDemoFake:    o.Ext.OnDemoFake,
		onDemoModel:   o.Ext.OnDemoModel,
		onParts:       o.OnParts,
		onReady:       o.OnReady,
		hostNow:       o.Now,
		egressRoutes:  o.HTTPRoutes,
		egressRoots:   o.HTTPRoots,
		quickStop:     o.QuickStop,

		assistantStall:         o.ModelStall,
		demoConfiguredProvider: o.ConfiguredProvider,
		assistantClock:         o.AssistantClock,
	}
	return c.main(ctx, append([]string{"serve"}, args...))
}

// testRootsTLS is the modules' egress TLS configuration that trusts roots
// (nil: the system's roots, the egress default).
func testRootsTLS(roots *x509.CertPool) *tls.Config {
	if roots == nil {
		return nil
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}
