package discord

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The interactions area: INTERACTION_CREATE routed to the module host
// (commands, autocomplete, components, modal submits) with the original's
// ephemeral replies, the sdk.Interaction over discordgo (ix_interaction.go)
// with the auto-defer, and the command sync (ix_sync.go).

// The original's ephemeral replies.
const (
	replyInactive      = "This control is no longer active."
	replyUnavailable   = "This control is temporarily unavailable."
	replyExpired       = "This control has expired."
	replyStaffOnly     = "Staff only."
	replyNotAllowed    = "Not allowed."
	replyControlFailed = "Something went wrong handling that control."
	replyCommandFailed = "Something went wrong running that command."
)

// A slash command no running module registers (Discord still shows it
// until the next sync) gets no reply, as in the original: discord.py's
// command tree raises CommandNotFound for it and its default on_error only
// logs, so Discord shows the user its own "The application did not
// respond".

// Timing of interactions.
const (
	// AutoDeferAfter is how long a handler may run before Kimi defers the
	// interaction itself, well inside Discord's 3 s for the first response.
	AutoDeferAfter = 2 * time.Second
	// CommandSyncDebounce collects command changes after READY into one sync.
	CommandSyncDebounce = 2 * time.Second
	// autocompleteBudget bounds an autocomplete handler: its only answer
	// must reach Discord within 3 s.
	autocompleteBudget = 2500 * time.Millisecond
	// interactionLifetime is how long an interaction token serves edits and
	// follow-ups.
	interactionLifetime = 15 * time.Minute
)

// stopper is a pending timer (*time.Timer).
type stopper interface{ Stop() bool }

func realAfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// CoreHandler handles the components whose custom ids core owns
// (m:<owner>:…, e.g. the proposals' m:proposals:…).
type CoreHandler interface {
	HandleComponent(ctx context.Context, kind sdk.ComponentKind, tier sdk.TrustTier, in sdk.Interaction) error
}

// DirectMessageHandler is a CoreHandler or CoreCommandHandler that also
// answers in a direct message with the bot (the interaction's GuildID 0,
// tier member); the others are refused there ("Not allowed.").
type DirectMessageHandler interface {
	// HandlesDirectMessages reports whether it answers in DMs.
	HandlesDirectMessages() bool
}

// inDMs reports whether h answers in DMs.
func inDMs(h any) bool {
	d, ok := h.(DirectMessageHandler)
	return ok && d.HandlesDirectMessages()
}

// coreOwners are the custom-id namespaces core owns: never routed to a
// module, answered "no longer active" until their handler is registered.
var coreOwners = map[string]bool{"proposals": true, "assistant": true}

var _ Host = (*host.Host)(nil)

type interactions struct {
	log    *slog.Logger
	src    sessionSource
	guilds GuildConfig
	st     *store.Store

	// autoDeferAfter and debounce are AutoDeferAfter and
	// CommandSyncDebounce; tests shorten them. afterFunc is time.AfterFunc
	// for the debounce (tests drive it by hand); dispatched, when set, is
	// called with each interaction's id once its dispatch is over.
	autoDeferAfter time.Duration
	debounce       time.Duration
	afterFunc      func(time.Duration, func()) stopper
	dispatched     func(id string)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	host Host
	core map[string]CoreHandler
	// coreCmds are the core commands answered by a registered handler
	// (RegisterCoreCommand), by name.
	coreCmds map[string]coreCommand
	appID    string // from the last READY
	ready    bool
	timer    stopper
	closed   bool
	hashes   map[string]string // without a store: app \x00 guild → hash

	// asst is the attached assistant (AttachAssistant; nil: none), owner
	// the bot owner's id.
	asst  asstHolder
	owner func() uint64

	syncMu    sync.Mutex // one sync at a time
	fullSyncs syncCounter
	// guildCreates counts the GUILD_CREATEs whose command check finished
	// (a sync or nothing to do; tests wait on it).
	guildCreates syncCounter
}

func newInteractions(log *slog.Logger, src sessionSource, guilds GuildConfig, st *store.Store) *interactions {
	ctx, cancel := context.WithCancel(context.Background())
	return &interactions{log: log, src: src, guilds: guilds, st: st, autoDeferAfter: AutoDeferAfter, debounce: CommandSyncDebounce, afterFunc: realAfterFunc,
		ctx: ctx, cancel: cancel, core: map[string]CoreHandler{}, hashes: map[string]string{}}
}

// attach sets the host interactions are dispatched to.
func (x *interactions) attach(h Host) {
	x.mu.Lock()
	x.host = h
	x.mu.Unlock()
}

// registerCore routes m:<owner>:… custom ids to h (owner must be one of
// core's namespaces).
func (x *interactions) registerCore(owner string, h CoreHandler) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if coreOwners[owner] {
		x.core[owner] = h
	}
}

// RegisterCoreHandler routes the components of a core namespace
// ("proposals": m:proposals:…) to h.
func (b *Bot) RegisterCoreHandler(owner string, h CoreHandler) { b.ix.registerCore(owner, h) }

// handlers are the discordgo handlers to add to every new session.
// Interactions come through the raw event (onEvent) so integer options are
// read from the gateway's JSON, not from discordgo's float64.
func (x *interactions) handlers() []any {
	return []any{x.onReady, x.onGuildCreate, x.onEvent}
}

// onEvent dispatches INTERACTION_CREATE with its raw payload.
func (x *interactions) onEvent(s *discordgo.Session, e *discordgo.Event) {
	if e == nil || e.Type != "INTERACTION_CREATE" {
		return
	}
	if ic, ok := e.Struct.(*discordgo.InteractionCreate); ok {
		x.onInteractionRaw(s, ic, e.RawData)
	}
}

func (x *interactions) hostNow() Host {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.host
}

// onInteraction dispatches off the gateway goroutine: handlers are
// synchronous (SyncEvents) and a module's handler may run for seconds.
func (x *interactions) onInteraction(s *discordgo.Session, ev *discordgo.InteractionCreate) {
	x.onInteractionRaw(s, ev, nil)
}

// onInteractionRaw is onInteraction with the event's JSON (nil: none).
func (x *interactions) onInteractionRaw(s *discordgo.Session, ev *discordgo.InteractionCreate, raw []byte) {
	if ev == nil || ev.Interaction == nil {
		return
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return
	}
	x.wg.Add(1)
	x.mu.Unlock()
	go func() {
		defer x.wg.Done()
		x.dispatch(s, ev.Interaction, raw)
		if x.dispatched != nil {
			x.dispatched(ev.ID)
		}
	}()
}

func (x *interactions) tierOf(in *interaction, i *discordgo.Interaction) sdk.TrustTier {
	if in.guildID == 0 || x.guilds == nil {
		return sdk.TierMember
	}
	var roles []uint64
	if i.Member != nil {
		roles = parseIDs(i.Member.Roles)
	}
	return x.guilds.Resolve(in.guildID, in.userID, roles)
}

func (x *interactions) dispatch(s *discordgo.Session, i *discordgo.Interaction, raw []byte) {
	ctx, cancel := context.WithTimeout(x.ctx, interactionLifetime)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			x.log.Error("interaction dispatch panicked", "panic", r)
		}
	}()
	in := newInteraction(x, s, i, raw)
	h := x.hostNow()
	tier := x.tierOf(in, i)

	if i.Type == discordgo.InteractionApplicationCommandAutocomplete {
		x.autocomplete(ctx, h, in, tier)
		return
	}
	var kind sdk.ComponentKind
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
	case discordgo.InteractionMessageComponent:
		kind = sdk.ComponentButton
		if i.MessageComponentData().ComponentType != discordgo.ButtonComponent {
			kind = sdk.ComponentSelect
		}
	case discordgo.InteractionModalSubmit:
		kind = sdk.ComponentModal
	default:
		return
	}
	// The auto-defer: Discord's 3 s for the first response is never missed.
	t := time.AfterFunc(x.autoDeferAfter, func() { in.autoDefer(ctx) })
	var err error
	if in.command {
		name, _ := commandPath(i.ApplicationCommandData())
		if core, cerr := x.runCoreCommand(ctx, name, tier, in); core {
			t.Stop()
			if cerr != nil {
				x.log.Warn("core command failed", "command", name, "err", cerr)
			}
			return
		}
		if h == nil {
			err = host.ErrUnavailable
		} else {
			err = h.RunCommand(ctx, name, tier, in)
		}
	} else {
		err = x.runComponent(ctx, h, kind, tier, in)
	}
	t.Stop()
	if in.command && errors.Is(err, host.ErrNoHandler) {
		name, _ := commandPath(i.ApplicationCommandData())
		x.log.Info("no running module registers the command; left unanswered", "command", name)
		return
	}
	if msg := x.reply(err, in.command); msg != "" {
		if msg == replyCommandFailed || msg == replyControlFailed {
			x.log.Warn("interaction handler failed", "custom_id", in.customID, "err", err)
		}
		if rerr := in.Respond(ctx, sdk.Response{Content: msg, Ephemeral: true}); rerr != nil {
			x.log.Warn("could not send the interaction's reply", "err", rerr)
		}
		return
	}
	in.acknowledge(ctx)
}

func (x *interactions) runComponent(ctx context.Context, h Host, kind sdk.ComponentKind, tier sdk.TrustTier, in *interaction) error {
	id, ok := sdk.ParseCustomID(in.customID)
	if ok && coreOwners[id.Module] {
		x.mu.Lock()
		core := x.core[id.Module]
		x.mu.Unlock()
		if core == nil {
			return host.ErrNoHandler
		}
		if in.guildID == 0 && !inDMs(core) {
			return &host.TierError{MinTier: sdk.TierMember}
		}
		in.BindModule(id.Module)
		return core.HandleComponent(ctx, kind, tier, in)
	}
	if h == nil {
		return host.ErrUnavailable
	}
	return h.RunComponent(ctx, kind, tier, in)
}

// reply is the ephemeral answer to a dispatch's outcome ("" when none).
func (x *interactions) reply(err error, command bool) string {
	var te *host.TierError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		if te.MinTier == sdk.TierStaff {
			return replyStaffOnly
		}
		return replyNotAllowed
	case errors.Is(err, host.ErrNoHandler):
		return replyInactive
	case errors.Is(err, host.ErrUnavailable):
		return replyUnavailable
	case errors.Is(err, host.ErrExpired):
		return replyExpired
	case command:
		return replyCommandFailed
	default:
		return replyControlFailed
	}
}

// autocomplete answers with the command's suggestions: none when the
// caller is not allowed or the handler fails, at most 25.
func (x *interactions) autocomplete(ctx context.Context, h Host, in *interaction, tier sdk.TrustTier) {
	ctx, cancel := context.WithTimeout(ctx, autocompleteBudget)
	defer cancel()
	name, opts := commandPath(in.i.ApplicationCommandData())
	option, current := "", ""
	for _, o := range opts {
		if o != nil && o.Focused {
			option = o.Name
			if s, ok := o.Value.(string); ok {
				current = s
			} else if o.Value != nil {
				current = optionString(o.Value)
			}
		}
	}
	var choices []sdk.Choice
	if h != nil && option != "" {
		var err error
		choices, err = h.RunAutocomplete(ctx, name, tier, in, option, current)
		if err != nil {
			choices = nil
			var te *host.TierError
			if !errors.As(err, &te) {
				x.log.Warn("autocomplete failed", "command", name, "err", err)
			}
		}
	}
	out := []*discordgo.ApplicationCommandOptionChoice{}
	for _, c := range choices[:min(len(choices), 25)] {
		out = append(out, &discordgo.ApplicationCommandOptionChoice{Name: c.Name, Value: c.Value})
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.callback(ctx, discordgo.InteractionApplicationCommandAutocompleteResult, &discordgo.InteractionResponseData{Choices: out}); err != nil {
		x.log.Warn("could not send autocomplete choices", "err", err)
	}
}

// commandsChanged re-syncs the commands, debounced; before the first READY
// it does nothing (READY syncs everything).
func (x *interactions) commandsChanged() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ready || x.closed {
		return
	}
	if x.timer != nil {
		x.timer.Stop()
	}
	x.timer = x.afterFunc(x.debounce, func() {
		// Counted in wg: Stop does not wait for a func already running,
		// and close must not return while a sync still runs.
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			return
		}
		x.wg.Add(1)
		x.mu.Unlock()
		x.syncCounted()
	})
}

// commandsReady syncs every command set now, without the debounce: the
// host's start has registered the whole set, so there is no burst left to
// collect (a pending debounced sync is dropped: this one covers it).
// Before READY it does nothing (READY syncs everything).
func (x *interactions) commandsReady() {
	x.mu.Lock()
	if !x.ready || x.closed {
		x.mu.Unlock()
		return
	}
	if x.timer != nil {
		x.timer.Stop()
		x.timer = nil
	}
	x.wg.Add(1)
	x.mu.Unlock()
	go x.syncCounted()
}

// syncCounted syncs every command set on the current session; its caller
// has counted it in wg (under mu, while not closed).
func (x *interactions) syncCounted() {
	defer x.wg.Done()
	s, err := x.src.session()
	if err != nil {
		return
	}
	x.syncAll(x.ctx, s)
}

// close stops pending syncs and waits for running dispatches.
func (x *interactions) close() {
	x.mu.Lock()
	x.closed = true
	if x.timer != nil {
		x.timer.Stop()
	}
	x.mu.Unlock()
	x.cancel()
	x.wg.Wait()
}
