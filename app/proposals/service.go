package proposals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Guilds is what the service needs of the guild configuration;
// *guildcfg.Service implements it.
type Guilds interface {
	Document(ctx context.Context, target guildcfg.Target) (guildcfg.Document, error)
	Validate(target guildcfg.Target, text string) error
	Write(ctx context.Context, target guildcfg.Target, text, expectedRevision string, actor guildcfg.Actor) (guildcfg.Document, error)
	Delete(ctx context.Context, target guildcfg.Target, expectedRevision string, actor guildcfg.Actor) error
	List(ctx context.Context) ([]guildcfg.GuildSummary, error)
}

var _ Guilds = (*guildcfg.Service)(nil)

// Discord is what the service needs of the Discord connection;
// app/discord's adapter (discord.NewCards) implements it.
type Discord interface {
	// ChannelGuild returns the guild of a channel.
	ChannelGuild(ctx context.Context, channelID uint64) (uint64, error)
	// PostCard sends the review card to a channel of guildID.
	PostCard(ctx context.Context, guildID, channelID uint64, embed *sdk.OutgoingEmbed, buttons []sdk.Component) (sdk.MessageRef, error)
	// EditCard replaces the card's embed and buttons (none: removed).
	EditCard(ctx context.Context, ref sdk.MessageRef, embed *sdk.OutgoingEmbed, buttons []sdk.Component) error
	// SendCoreDM sends a DM; false when it could not be delivered.
	SendCoreDM(ctx context.Context, userID uint64, content string) (bool, error)
	// OwnerID is the application owner (0 until known).
	OwnerID() uint64
}

// Options configures New.
type Options struct {
	Store  *store.Store
	Guilds Guilds
	// Discord posts and edits cards (nil: every Propose fails with
	// "posting the proposal review card failed").
	Discord Discord
	// KnownModule reports whether a module is loaded (nil: every module
	// guildcfg knows); guild:<id>:<module> targets need a known module.
	KnownModule func(module string) bool
	// OwnerUserID is KIMI_OWNER_USER_ID, the DM notification's recipient
	// when Discord does not name the application owner.
	OwnerUserID uint64
	// Notify overrides the notification settings' source (tests); nil:
	// settings.LoadProposalNotifications on Store.
	Notify func(ctx context.Context) (settings.ProposalNotifications, error)
	// Webhook posts the webhook notification (nil: the egress rules'
	// public-hosts-only client).
	Webhook func(ctx context.Context, url string, payload any) error
	Logger  *slog.Logger
	Now     func() time.Time
}

// decisionMu is the one decision lock of the process: approvals and
// rejections, from Discord or the web, run one at a time.
var decisionMu sync.Mutex

// Service is the proposals service. Safe for concurrent use.
type Service struct {
	st      *store.Store
	guilds  Guilds
	discord Discord
	known   func(string) bool
	owner   uint64
	notify  func(ctx context.Context) (settings.ProposalNotifications, error)
	webhook func(ctx context.Context, url string, payload any) error
	log     *slog.Logger
	now     func() time.Time

	counts counts // the inbox's counts by state, kept until a write (counts.go)

	watchMu  sync.Mutex
	watchers map[int]func()
	nextW    int

	bg     sync.WaitGroup
	bgCtx  context.Context
	cancel context.CancelFunc
}

// New builds the service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Guilds == nil {
		return nil, fmt.Errorf("proposals: new: a store and the guild configuration are required")
	}
	s := &Service{
		st: opts.Store, guilds: opts.Guilds, discord: opts.Discord, known: opts.KnownModule, owner: opts.OwnerUserID,
		notify: opts.Notify, webhook: opts.Webhook, log: opts.Logger, now: opts.Now, watchers: map[int]func(){},
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.notify == nil {
		s.notify = func(ctx context.Context) (settings.ProposalNotifications, error) {
			return settings.LoadProposalNotifications(ctx, s.st)
		}
	}
	if s.webhook == nil {
		s.webhook = postWebhook
	}
	s.bgCtx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the notifications in flight and waits for them.
func (s *Service) Close() {
	s.cancel()
	s.bg.Wait()
}

// Port returns module's view of the service (the sdk.Proposals port): it
// attributes every proposal to module.
func (s *Service) Port(module string) sdk.Proposals { return &port{s: s, module: module} }

// Watch calls fn after every change (a new proposal, a decision); cancel
// stops it. fn must not block.
func (s *Service) Watch(fn func()) (cancel func()) {
	s.watchMu.Lock()
	id := s.nextW
	s.nextW++
	s.watchers[id] = fn
	s.watchMu.Unlock()
	return func() {
		s.watchMu.Lock()
		delete(s.watchers, id)
		s.watchMu.Unlock()
	}
}

func (s *Service) changed() {
	s.watchMu.Lock()
	fns := make([]func(), 0, len(s.watchers))
	for _, fn := range s.watchers {
		fns = append(fns, fn)
	}
	s.watchMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// newID is a random 32-lowercase-hex id (as the original's uuid4().hex).
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("proposals: new id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// validID reports whether id is 32 lowercase hex characters.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReportUncarded logs a warning for every pending proposal without a review
// card (the original warns at start) and returns them.
func (s *Service) ReportUncarded(ctx context.Context) ([]Proposal, error) {
	ps, err := s.Uncarded(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		s.log.Warn("pending proposal has no review card", "proposal", p.ID, "guild", p.GuildID, "target", p.Target.String(), "module", p.Module)
	}
	return ps, nil
}
