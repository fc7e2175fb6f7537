package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Errors of the interaction's response methods.
var (
	// ErrModalAfterAnswer: a modal must be the interaction's first response.
	ErrModalAfterAnswer = errors.New("discord: a modal must be the first response to an interaction; this one was already answered or deferred")
	// ErrNotAnswered: follow-ups and edits of a command's response need a
	// first response (Respond or Defer).
	ErrNotAnswered = errors.New("discord: the interaction has no response yet; Respond or Defer first")
	// ErrAlreadyAnswered: Defer after the first response.
	ErrAlreadyAnswered = errors.New("discord: the interaction was already answered")
)

// interaction is the sdk.Interaction over one discordgo interaction. Its
// response methods serialize on mu (the auto-defer timer among them), so
// the first callback is sent exactly once.
type interaction struct {
	x       *interactions
	s       *discordgo.Session
	i       *discordgo.Interaction
	command bool // an application command (else a component or modal submit)

	guildID, channelID, userID uint64
	guildName                  string
	opts                       sdk.Options
	customID                   string
	values                     []string
	text                       map[string]string
	msg                        *sdk.MessageRef

	mu     sync.Mutex
	module string // the handling module, for custom ids (host.ModuleBinder)
	// answered: the first callback was sent. pending: it was a deferred
	// reply (type 5) whose "thinking" original is not filled yet, of
	// visibility pendingEphemeral. auto: Kimi deferred on its own.
	answered, pending, pendingEphemeral, auto bool
	// originalLayout: the message EditOriginal edits is a Components V2 one.
	originalLayout bool
}

var (
	_ sdk.Interaction   = (*interaction)(nil)
	_ host.ModuleBinder = (*interaction)(nil)
)

func newInteraction(x *interactions, s *discordgo.Session, i *discordgo.Interaction, raw []byte) *interaction {
	in := &interaction{x: x, s: s, i: i, guildID: parseID(i.GuildID), channelID: parseID(i.ChannelID)}
	if u := interactionUser(i); u != nil {
		in.userID = parseID(u.ID)
	}
	if in.guildID != 0 && s != nil && s.State != nil {
		if g, err := s.State.Guild(i.GuildID); err == nil && g != nil {
			in.guildName = g.Name
		}
	}
	if i.Message != nil {
		ref := sdk.MessageRef{GuildID: in.guildID, ChannelID: parseID(i.Message.ChannelID), MessageID: parseID(i.Message.ID)}
		if ref.ChannelID == 0 {
			ref.ChannelID = in.channelID
		}
		if s != nil && s.State != nil {
			if ch, err := s.State.Channel(idString(ref.ChannelID)); err == nil && ch != nil && isThread(ch.Type) {
				ref.ParentChannelID = parseID(ch.ParentID)
			}
		}
		in.msg = &ref
		in.originalLayout = i.Message.Flags&discordgo.MessageFlagsIsComponentsV2 != 0
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand, discordgo.InteractionApplicationCommandAutocomplete:
		in.command = true
		in.opts = sdk.Options{}
		_, opts := commandPath(i.ApplicationCommandData())
		exact := rawIntegers(raw)
		for _, o := range opts {
			if v, ok := optionValue(o); ok {
				in.opts[o.Name] = v
			}
			if n, ok := exact[o.Name]; ok && o.Type == discordgo.ApplicationCommandOptionInteger {
				in.opts[o.Name] = n
			}
		}
	case discordgo.InteractionMessageComponent:
		d := i.MessageComponentData()
		in.customID, in.values = d.CustomID, slices.Clone(d.Values)
	case discordgo.InteractionModalSubmit:
		d := i.ModalSubmitData()
		in.customID, in.text = d.CustomID, modalValues(d.Components)
	}
	return in
}

// interactionUser is the member's user in a guild, the user in a DM.
func interactionUser(i *discordgo.Interaction) *discordgo.User {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User
	}
	return i.User
}

// commandPath reduces a command's data to its qualified name (group.name,
// as sdk.CommandSpec.QualifiedName) and the options of the command itself:
// one group level, its subcommand's options flattened.
func commandPath(d discordgo.ApplicationCommandInteractionData) (string, []*discordgo.ApplicationCommandInteractionDataOption) {
	name, opts := d.Name, d.Options
	if len(opts) == 1 && opts[0] != nil && opts[0].Type == discordgo.ApplicationCommandOptionSubCommand {
		name, opts = name+"."+opts[0].Name, opts[0].Options
	}
	return name, opts
}

// rawOption is a command option as the gateway's JSON has it.
type rawOption struct {
	Name    string                                 `json:"name"`
	Type    discordgo.ApplicationCommandOptionType `json:"type"`
	Value   json.RawMessage                        `json:"value"`
	Options []rawOption                            `json:"options"`
}

// rawIntegers reads the integer options of the command itself (one
// subcommand level, as commandPath) from an INTERACTION_CREATE's JSON:
// exact int64s, where discordgo's decoding keeps only a float64 (wrong
// above 2^53). Nil when raw is nil or not such a payload.
func rawIntegers(raw []byte) map[string]int64 {
	if len(raw) == 0 {
		return nil
	}
	var ev struct {
		Data struct {
			Options []rawOption `json:"options"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &ev) != nil {
		return nil
	}
	opts := ev.Data.Options
	if len(opts) == 1 && opts[0].Type == discordgo.ApplicationCommandOptionSubCommand {
		opts = opts[0].Options
	}
	out := map[string]int64{}
	for _, o := range opts {
		if o.Type != discordgo.ApplicationCommandOptionInteger {
			continue
		}
		if n, err := strconv.ParseInt(string(o.Value), 10, 64); err == nil {
			out[o.Name] = n
		}
	}
	return out
}

// optionValue reduces an option: user, channel, role and mentionable to
// uint64 ids, integers to int64, strings and booleans as they are.
func optionValue(o *discordgo.ApplicationCommandInteractionDataOption) (any, bool) {
	if o == nil {
		return nil, false
	}
	switch o.Type {
	case discordgo.ApplicationCommandOptionString:
		s, ok := o.Value.(string)
		return s, ok
	case discordgo.ApplicationCommandOptionInteger:
		switch v := o.Value.(type) {
		case float64:
			return int64(v), true
		case int64:
			return v, true
		case int:
			return int64(v), true
		}
	case discordgo.ApplicationCommandOptionBoolean:
		b, ok := o.Value.(bool)
		return b, ok
	case discordgo.ApplicationCommandOptionUser, discordgo.ApplicationCommandOptionChannel,
		discordgo.ApplicationCommandOptionRole, discordgo.ApplicationCommandOptionMentionable:
		if s, ok := o.Value.(string); ok {
			if id := parseID(s); id != 0 {
				return id, true
			}
		}
	}
	return nil, false
}

// modalValues are a modal submit's text inputs by custom id (the input's key).
func modalValues(rows []discordgo.MessageComponent) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		row, ok := r.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, c := range row.Components {
			if ti, ok := c.(*discordgo.TextInput); ok {
				out[ti.CustomID] = ti.Value
			}
		}
	}
	return out
}

func (in *interaction) GuildID() uint64               { return in.guildID }
func (in *interaction) ChannelID() uint64             { return in.channelID }
func (in *interaction) UserID() uint64                { return in.userID }
func (in *interaction) GuildName() string             { return in.guildName }
func (in *interaction) Options() sdk.Options          { return maps.Clone(in.opts) }
func (in *interaction) CustomID() string              { return in.customID }
func (in *interaction) Values() []string              { return slices.Clone(in.values) }
func (in *interaction) TextValues() map[string]string { return maps.Clone(in.text) }
func (in *interaction) Message() *sdk.MessageRef {
	if in.msg == nil {
		return nil
	}
	m := *in.msg
	return &m
}

// BindModule records the handling module (host.ModuleBinder).
func (in *interaction) BindModule(module string) {
	in.mu.Lock()
	in.module = module
	in.mu.Unlock()
}

// body is a converted response: Discord's limits and the layout rules are
// checked before anything is sent.
type body struct {
	content    string
	embeds     []*discordgo.MessageEmbed
	components []discordgo.MessageComponent
	flags      discordgo.MessageFlags
	layout     bool
}

func (in *interaction) convert(r sdk.Response) (body, error) {
	if err := hostkit.ValidateResponseBody(r); err != nil {
		return body{}, err
	}
	rows, err := componentsOut(in.module, r.Components, r.Layout)
	if err != nil {
		return body{}, err
	}
	b := body{content: r.Content, components: rows, embeds: []*discordgo.MessageEmbed{}}
	e := embedOut(r.Embed, time.Now())
	if err := checkContent(r.Content, e); err != nil {
		return body{}, err
	}
	if e != nil {
		b.embeds = append(b.embeds, e)
	}
	if b.components == nil {
		b.components = []discordgo.MessageComponent{}
	}
	if r.Layout != nil {
		b.components = layoutOut(r.Layout, rows)
		b.flags |= discordgo.MessageFlagsIsComponentsV2
		b.layout, b.embeds = true, nil
	}
	if r.Ephemeral {
		b.flags |= discordgo.MessageFlagsEphemeral
	}
	return b, nil
}

func (b body) data() *discordgo.InteractionResponseData {
	return &discordgo.InteractionResponseData{Content: b.content, Embeds: b.embeds, Components: b.components, Flags: b.flags, AllowedMentions: noMentions()}
}

// edit is the PATCH body of an edit: discordgo's WebhookEdit carries no
// flags, and a message turned into a layout needs the V2 flag.
func (b body) edit() map[string]any {
	m := map[string]any{"components": b.components, "allowed_mentions": noMentions()}
	if b.layout {
		m["flags"] = discordgo.MessageFlagsIsComponentsV2
	} else {
		m["content"], m["embeds"] = b.content, b.embeds
	}
	return m
}

func (in *interaction) callback(ctx context.Context, t discordgo.InteractionResponseType, d *discordgo.InteractionResponseData) error {
	if err := in.s.InteractionRespond(in.i, &discordgo.InteractionResponse{Type: t, Data: d}, requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: interaction response: %w", err)
	}
	in.answered = true
	return nil
}

func (in *interaction) followUp(ctx context.Context, b body) error {
	_, err := in.s.FollowupMessageCreate(in.i, true, &discordgo.WebhookParams{Content: b.content, Embeds: b.embeds,
		Components: b.components, Flags: b.flags, AllowedMentions: noMentions()}, requestOptions(ctx)...)
	if err != nil {
		return fmt.Errorf("discord: interaction follow-up: %w", err)
	}
	return nil
}

func (in *interaction) editOriginal(ctx context.Context, b body) error {
	ep := discordgo.EndpointInteractionResponseActions(in.i.AppID, in.i.Token)
	if _, err := in.s.RequestWithBucketID(http.MethodPatch, ep, b.edit(), ep, requestOptions(ctx)...); err != nil {
		return fmt.Errorf("discord: edit the interaction response: %w", err)
	}
	return nil
}

// Respond answers: the first response is a channel message; after it, a
// follow-up. After a deferred reply (Defer or the auto-defer) a response of
// the deferral's visibility fills the "thinking" message; a public
// response after an ephemeral deferral (the auto-defer of a command) is
// sent as a public follow-up and the ephemeral placeholder is deleted, so
// no stale "thinking…" stays behind.
func (in *interaction) Respond(ctx context.Context, r sdk.Response) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	b, err := in.convert(r)
	if err != nil {
		return err
	}
	switch {
	case !in.answered:
		if err := in.callback(ctx, discordgo.InteractionResponseChannelMessageWithSource, b.data()); err != nil {
			return err
		}
		in.originalLayout = b.layout
		return nil
	case in.pending && r.Ephemeral == in.pendingEphemeral:
		if err := in.editOriginal(ctx, b); err != nil {
			return err
		}
		in.pending, in.originalLayout = false, b.layout
		return nil
	case in.pending && in.pendingEphemeral && !r.Ephemeral:
		if err := in.followUp(ctx, b); err != nil {
			return err
		}
		in.pending = false
		if err := in.s.InteractionResponseDelete(in.i, requestOptions(ctx)...); err != nil {
			in.x.log.Warn("could not delete the deferred placeholder", "err", err)
		}
		return nil
	default:
		return in.followUp(ctx, b)
	}
}

// Defer acknowledges now: a command with a deferred reply ("thinking",
// ephemeral as asked), a component with a deferred update (or a deferred
// ephemeral reply when ephemeral). After the auto-defer it is a no-op.
func (in *interaction) Defer(ctx context.Context, ephemeral bool) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.answered {
		if in.auto {
			return nil
		}
		return ErrAlreadyAnswered
	}
	return in.deferLocked(ctx, ephemeral)
}

func (in *interaction) deferLocked(ctx context.Context, ephemeral bool) error {
	if !in.command && !ephemeral {
		return in.callback(ctx, discordgo.InteractionResponseDeferredMessageUpdate, nil)
	}
	var d *discordgo.InteractionResponseData
	if ephemeral {
		d = &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}
	}
	if err := in.callback(ctx, discordgo.InteractionResponseDeferredChannelMessageWithSource, d); err != nil {
		return err
	}
	in.pending, in.pendingEphemeral, in.originalLayout = true, ephemeral, false
	return nil
}

// autoDefer defers an interaction its handler has not answered yet:
// components as a deferred update, commands as a deferred ephemeral reply.
func (in *interaction) autoDefer(ctx context.Context) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.answered {
		return
	}
	if err := in.deferLocked(ctx, in.command); err != nil {
		in.x.log.Warn("auto-defer failed", "err", err)
		return
	}
	in.auto = true
}

// ShowModal opens a modal; it must be the first response (ErrModalAfterAnswer
// after Respond, Defer or the auto-defer), and a modal submit cannot open
// another.
func (in *interaction) ShowModal(ctx context.Context, m sdk.ModalSpec) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.answered {
		return ErrModalAfterAnswer
	}
	if in.i.Type == discordgo.InteractionModalSubmit {
		return errors.New("discord: a modal submit cannot be answered with another modal")
	}
	d, err := modalOut(in.module, m)
	if err != nil {
		return err
	}
	return in.callback(ctx, discordgo.InteractionResponseModal, d)
}

// EditOriginal edits the original response (a component's message before
// any response: an update of it). Nil Components clear the controls; a
// Components V2 original must stay a layout.
func (in *interaction) EditOriginal(ctx context.Context, r sdk.Response) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := hostkit.ValidateLayoutEdit(in.originalLayout, r); err != nil {
		return err
	}
	r.Ephemeral = false
	b, err := in.convert(r)
	if err != nil {
		return err
	}
	if !in.answered {
		if in.command {
			return ErrNotAnswered
		}
		if err := in.callback(ctx, discordgo.InteractionResponseUpdateMessage, b.data()); err != nil {
			return err
		}
	} else if err := in.editOriginal(ctx, b); err != nil {
		return err
	}
	in.pending, in.originalLayout = false, in.originalLayout || b.layout
	return nil
}

// FollowUp sends another message after the first response (controls and
// layouts are not sent with follow-ups, as in the reference).
func (in *interaction) FollowUp(ctx context.Context, r sdk.Response) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.answered {
		return ErrNotAnswered
	}
	r.Components, r.Layout = nil, nil
	b, err := in.convert(r)
	if err != nil {
		return err
	}
	return in.followUp(ctx, b)
}

// acknowledge sends a deferred update for a component whose handler
// returned without answering, so Discord does not show a failure.
func (in *interaction) acknowledge(ctx context.Context) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.answered || in.command || in.i.Type == discordgo.InteractionApplicationCommandAutocomplete {
		return
	}
	if err := in.callback(ctx, discordgo.InteractionResponseDeferredMessageUpdate, nil); err != nil {
		in.x.log.Warn("could not acknowledge the interaction", "err", err)
	}
}
