package host

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/modstore"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// storageFactory is what the host needs of module storage; *modstore.Manager
// is the production one (through modstoreFactory).
type storageFactory interface {
	Migrate(ctx context.Context, module string, perms sdk.Permissions, migrations []sdk.Migration) ([]string, error)
	Open(ctx context.Context, module string, perms sdk.Permissions) (storagePort, error)
}

// storagePort is one module's open storage.
type storagePort interface {
	sdk.Storage
	Raw() *sql.DB
	Stats() modstore.WriteStats
	Close() error
}

// eventsFactory is what the host needs of the event bus; *events.Bus is the
// production one (through busFactory).
type eventsFactory interface {
	Module(ctx context.Context, module string, perms sdk.Permissions, guildActive func(uint64) bool) eventsPort
}

// eventsPort is one module's view of the bus.
type eventsPort interface {
	sdk.EventBus
	Stats() events.Stats
	Close(timeout time.Duration)
}

type modstoreFactory struct{ m *modstore.Manager }

func (f modstoreFactory) Migrate(ctx context.Context, module string, perms sdk.Permissions, migrations []sdk.Migration) ([]string, error) {
	return f.m.Migrate(ctx, module, perms, migrations)
}

func (f modstoreFactory) Open(ctx context.Context, module string, perms sdk.Permissions) (storagePort, error) {
	p, err := f.m.Open(ctx, module, perms)
	if err != nil {
		return nil, err
	}
	return p, nil
}

type busFactory struct{ b *events.Bus }

func (f busFactory) Module(ctx context.Context, module string, perms sdk.Permissions, guildActive func(uint64) bool) eventsPort {
	return f.b.Module(ctx, module, perms, guildActive)
}

var (
	_ storageFactory = modstoreFactory{}
	_ eventsFactory  = busFactory{}
	_ storagePort    = (*modstore.Port)(nil)
	_ eventsPort     = (*events.ModuleBus)(nil)
)

// revocableStorage refuses every call once its module closed (the
// modstore port closes its own pool too; this makes the refusal clear).
type revocableStorage struct {
	inst *instance
	p    storagePort
}

var _ sdk.Storage = (*revocableStorage)(nil)

func (s *revocableStorage) Table(name string) string { return s.p.Table(name) }

func (s *revocableStorage) Reader() *sql.DB { return s.p.Reader() }

func (s *revocableStorage) WriteTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if s.inst.revoked() {
		return s.inst.revokedErr("storage")
	}
	return s.p.WriteTx(ctx, fn)
}

// revocableEvents refuses Publish and Subscribe once its module closed.
type revocableEvents struct {
	inst *instance
	p    eventsPort
}

var _ sdk.EventBus = (*revocableEvents)(nil)

func (e *revocableEvents) Publish(topic string, payload any) error {
	if e.inst.revoked() {
		return e.inst.revokedErr("events")
	}
	return e.p.Publish(topic, payload)
}

func (e *revocableEvents) Subscribe(pattern string, handler sdk.EventHandler) (sdk.Registration, error) {
	if e.inst.revoked() {
		return nil, e.inst.revokedErr("events")
	}
	return e.p.Subscribe(pattern, handler)
}

// trust is the sdk.Trust port over guildcfg's resolver. Without a Discord
// connection the member's roles are unknown, so only user-id lists count.
type trust struct {
	inst *instance
	g    GuildConfig
}

var _ sdk.Trust = (*trust)(nil)

func (t *trust) Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	if t.inst.revoked() {
		return 0, t.inst.revokedErr("trust")
	}
	return t.g.Resolve(guildID, userID, nil), nil
}

// ErrDiscordNotConnected is what every Discord action and live command
// sync returns until the Discord connection is wired.
var ErrDiscordNotConnected = errors.New("host: Discord is not connected")

// discordActions is the sdk.DiscordActions port while Discord is not
// connected: undeclared actions fail as they will later
// (*sdk.UndeclaredDiscordActionError), declared ones with ErrDiscordNotConnected.
type discordActions struct{ inst *instance }

var _ sdk.DiscordActions = (*discordActions)(nil)

func (d *discordActions) check(a sdk.DiscordAction) error {
	if d.inst.revoked() {
		return d.inst.revokedErr("discord")
	}
	if !d.inst.spec.Permissions.Allows(a) {
		return hostkit.NewUndeclaredDiscordActionError(d.inst.name, a)
	}
	return ErrDiscordNotConnected
}

func (d *discordActions) SendMessage(context.Context, uint64, sdk.OutgoingMessage) (sdk.MessageRef, error) {
	return sdk.MessageRef{}, d.check(sdk.ActionSendMessage)
}
func (d *discordActions) SendDM(context.Context, uint64, string, *sdk.OutgoingEmbed) (bool, error) {
	return false, d.check(sdk.ActionSendDM)
}
func (d *discordActions) EditMessage(context.Context, sdk.MessageRef, string, *sdk.OutgoingEmbed) error {
	return d.check(sdk.ActionEditMessage)
}
func (d *discordActions) DeleteMessage(context.Context, sdk.MessageRef, string) error {
	return d.check(sdk.ActionDeleteMessage)
}
func (d *discordActions) Ban(context.Context, uint64, uint64, sdk.Moderation, time.Duration) error {
	return d.check(sdk.ActionBan)
}
func (d *discordActions) Kick(context.Context, uint64, uint64, sdk.Moderation) error {
	return d.check(sdk.ActionKick)
}
func (d *discordActions) Timeout(context.Context, uint64, uint64, sdk.Moderation, time.Duration) error {
	return d.check(sdk.ActionTimeout)
}
func (d *discordActions) FetchMessage(context.Context, sdk.MessageRef) (*sdk.MessageSnapshot, error) {
	return nil, d.check(sdk.ActionFetchMessage)
}
func (d *discordActions) FetchMember(context.Context, uint64, uint64) (*sdk.MemberSnapshot, error) {
	return nil, d.check(sdk.ActionFetchMember)
}
func (d *discordActions) FetchChannel(context.Context, uint64, uint64) (*sdk.ChannelSnapshot, error) {
	return nil, d.check(sdk.ActionFetchChannel)
}
func (d *discordActions) FetchMessages(context.Context, uint64, uint64, sdk.HistoryQuery) (sdk.MessagePage, error) {
	return sdk.MessagePage{}, d.check(sdk.ActionFetchMessages)
}
func (d *discordActions) FetchPins(context.Context, uint64, uint64) ([]sdk.MessageSnapshot, error) {
	return nil, d.check(sdk.ActionFetchPins)
}
func (d *discordActions) FetchPublicThreads(context.Context, uint64, uint64) ([]sdk.ChannelSnapshot, error) {
	return nil, d.check(sdk.ActionFetchPublicThreads)
}
func (d *discordActions) FetchRoles(context.Context, uint64) ([]sdk.RoleSnapshot, error) {
	return nil, d.check(sdk.ActionFetchRoles)
}
func (d *discordActions) FetchInvites(context.Context, uint64) ([]sdk.InviteSnapshot, error) {
	return nil, d.check(sdk.ActionFetchInvites)
}
func (d *discordActions) CanViewChannel(context.Context, uint64, uint64, uint64) (bool, error) {
	return false, d.check(sdk.ActionCanViewChannel)
}

// guildSettings is the sdk.GuildSettings port over guildcfg's snapshot.
type guildSettings struct {
	inst *instance
	g    GuildConfig
}

var _ sdk.GuildSettings = (*guildSettings)(nil)

func (s *guildSettings) GuildIDs() []uint64 {
	if s.inst.revoked() {
		return nil
	}
	return slices.DeleteFunc(s.g.GuildIDs(), func(id uint64) bool { return !s.g.ModuleEnabled(id, s.inst.name) })
}

func (s *guildSettings) Get(ctx context.Context, guildID uint64) (sdk.GuildSettingsSnapshot, error) {
	if s.inst.revoked() {
		return sdk.GuildSettingsSnapshot{}, s.inst.revokedErr("guild settings")
	}
	snap, _ := s.g.ModuleSettings(guildID, s.inst.name)
	return snap, nil
}

func (s *guildSettings) IsEnabled(ctx context.Context, guildID uint64) bool {
	return !s.inst.revoked() && s.g.ModuleEnabled(guildID, s.inst.name)
}

// OnChange registers fn; the host calls it per changed (guild, module),
// contained and only while the module runs.
func (s *guildSettings) OnChange(fn func(ctx context.Context, guildID uint64)) sdk.Registration {
	return s.inst.addOnChange(fn)
}

// invalidGuildsDetail is the health detail for a module whose settings are
// invalid in guilds: "invalid guild settings in g1, g2, …" (first ten).
func invalidGuildsDetail(ids []uint64) string {
	parts := make([]string, 0, min(len(ids), 10)+1)
	for i, id := range ids {
		if i == 10 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, uintString(id))
	}
	return "invalid guild settings in " + strings.Join(parts, ", ")
}
