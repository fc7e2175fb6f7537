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

// busFactory gives each module its view of the bus, its failed handlers
// reported to the host.
type busFactory struct {
	b      *events.Bus
	report func(module, topic string, err error)
}

func (f busFactory) Module(ctx context.Context, module string, perms sdk.Permissions, guildActive func(uint64) bool) eventsPort {
	return f.b.ModuleReporting(ctx, module, perms, guildActive, f.report)
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
	return e.p.Subscribe(pattern, e.inst.h.watchedHandler(e.inst, handler))
}

// trust is the sdk.Trust port over guildcfg's resolver. With a Discord
// connection the member's roles come from it (d.Tier); without one the
// roles are unknown, so only user-id lists count.
type trust struct {
	inst *instance
	g    GuildConfig
	d    Discord // nil when not connected
}

var _ sdk.Trust = (*trust)(nil)

func (t *trust) Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	if t.inst.revoked() {
		return 0, t.inst.revokedErr("trust")
	}
	if t.d != nil {
		return t.d.Tier(ctx, guildID, userID)
	}
	if t.g == nil {
		return sdk.TierMember, nil
	}
	return t.g.Resolve(guildID, userID, nil), nil
}

// ErrDiscordNotConnected is what every Discord action and live command
// sync returns until the Discord connection is wired.
var ErrDiscordNotConnected = errors.New("host: Discord is not connected")

// discordActions is the sdk.DiscordActions port: undeclared actions (and
// every action of a revoked module) are refused before anything reaches
// Discord (*sdk.UndeclaredDiscordActionError); declared ones are forwarded
// to the connection, or fail with ErrDiscordNotConnected without one.
type discordActions struct {
	inst *instance
	d    Discord // nil when not connected
}

var _ sdk.DiscordActions = (*discordActions)(nil)

// discordWithPermissions is the optional part of Discord that takes the
// module's permissions (the override_target_policy flag); *discord.Bot
// implements it.
type discordWithPermissions interface {
	ActionsFor(module string, perms sdk.Permissions) sdk.DiscordActions
}

// check refuses a revoked module's call and an undeclared action, and
// returns the connection's actions for the module.
func (d *discordActions) check(a sdk.DiscordAction) (sdk.DiscordActions, error) {
	if d.inst.revoked() {
		return nil, d.inst.revokedErr("discord")
	}
	if !d.inst.spec.Permissions.Allows(a) {
		return nil, hostkit.NewUndeclaredDiscordActionError(d.inst.name, a)
	}
	if d.d == nil {
		return nil, ErrDiscordNotConnected
	}
	if p, ok := d.d.(discordWithPermissions); ok {
		return p.ActionsFor(d.inst.name, d.inst.spec.Permissions), nil
	}
	impl := d.d.Actions(d.inst.name)
	if impl == nil {
		return nil, ErrDiscordNotConnected
	}
	return impl, nil
}

func (d *discordActions) SendMessage(ctx context.Context, channelID uint64, msg sdk.OutgoingMessage) (sdk.MessageRef, error) {
	impl, err := d.check(sdk.ActionSendMessage)
	if err != nil {
		return sdk.MessageRef{}, err
	}
	return impl.SendMessage(ctx, channelID, msg)
}
func (d *discordActions) SendDM(ctx context.Context, userID uint64, content string, embed *sdk.OutgoingEmbed) (bool, error) {
	impl, err := d.check(sdk.ActionSendDM)
	if err != nil {
		return false, err
	}
	return impl.SendDM(ctx, userID, content, embed)
}
func (d *discordActions) EditMessage(ctx context.Context, ref sdk.MessageRef, content string, embed *sdk.OutgoingEmbed) error {
	impl, err := d.check(sdk.ActionEditMessage)
	if err != nil {
		return err
	}
	return impl.EditMessage(ctx, ref, content, embed)
}
func (d *discordActions) DeleteMessage(ctx context.Context, ref sdk.MessageRef, reason string) error {
	impl, err := d.check(sdk.ActionDeleteMessage)
	if err != nil {
		return err
	}
	return impl.DeleteMessage(ctx, ref, reason)
}
func (d *discordActions) Ban(ctx context.Context, guildID, userID uint64, mod sdk.Moderation, deleteMessages time.Duration) error {
	impl, err := d.check(sdk.ActionBan)
	if err != nil {
		return err
	}
	return impl.Ban(ctx, guildID, userID, mod, deleteMessages)
}
func (d *discordActions) Kick(ctx context.Context, guildID, userID uint64, mod sdk.Moderation) error {
	impl, err := d.check(sdk.ActionKick)
	if err != nil {
		return err
	}
	return impl.Kick(ctx, guildID, userID, mod)
}
func (d *discordActions) Timeout(ctx context.Context, guildID, userID uint64, mod sdk.Moderation, duration time.Duration) error {
	impl, err := d.check(sdk.ActionTimeout)
	if err != nil {
		return err
	}
	return impl.Timeout(ctx, guildID, userID, mod, duration)
}
func (d *discordActions) FetchMessage(ctx context.Context, ref sdk.MessageRef) (*sdk.MessageSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchMessage)
	if err != nil {
		return nil, err
	}
	return impl.FetchMessage(ctx, ref)
}
func (d *discordActions) FetchMember(ctx context.Context, guildID, userID uint64) (*sdk.MemberSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchMember)
	if err != nil {
		return nil, err
	}
	return impl.FetchMember(ctx, guildID, userID)
}
func (d *discordActions) FetchChannel(ctx context.Context, guildID, channelID uint64) (*sdk.ChannelSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchChannel)
	if err != nil {
		return nil, err
	}
	return impl.FetchChannel(ctx, guildID, channelID)
}
func (d *discordActions) FetchMessages(ctx context.Context, guildID, channelID uint64, q sdk.HistoryQuery) (sdk.MessagePage, error) {
	impl, err := d.check(sdk.ActionFetchMessages)
	if err != nil {
		return sdk.MessagePage{}, err
	}
	return impl.FetchMessages(ctx, guildID, channelID, q)
}
func (d *discordActions) FetchPins(ctx context.Context, guildID, channelID uint64) ([]sdk.MessageSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchPins)
	if err != nil {
		return nil, err
	}
	return impl.FetchPins(ctx, guildID, channelID)
}
func (d *discordActions) FetchPublicThreads(ctx context.Context, guildID, parentChannelID uint64) ([]sdk.ChannelSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchPublicThreads)
	if err != nil {
		return nil, err
	}
	return impl.FetchPublicThreads(ctx, guildID, parentChannelID)
}
func (d *discordActions) FetchRoles(ctx context.Context, guildID uint64) ([]sdk.RoleSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchRoles)
	if err != nil {
		return nil, err
	}
	return impl.FetchRoles(ctx, guildID)
}
func (d *discordActions) FetchInvites(ctx context.Context, guildID uint64) ([]sdk.InviteSnapshot, error) {
	impl, err := d.check(sdk.ActionFetchInvites)
	if err != nil {
		return nil, err
	}
	return impl.FetchInvites(ctx, guildID)
}
func (d *discordActions) CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error) {
	impl, err := d.check(sdk.ActionCanViewChannel)
	if err != nil {
		return false, err
	}
	return impl.CanViewChannel(ctx, guildID, userID, channelID)
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
