package proposals

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// The port's refusals (reference §4.1), shown to the member as they are.
const (
	MsgNoActorGuild    = "proposal actor must belong to a guild"
	MsgForeignTarget   = "proposal target must belong to the actor's guild"
	MsgNoReviewChannel = "proposal review channel must belong to the actor's guild"
	MsgCardFailed      = "posting the proposal review card failed"
)

// port is one module's sdk.Proposals: every proposal it makes is the
// module's, whatever the caller passes.
type port struct {
	s      *Service
	module string
}

var _ sdk.Proposals = (*port)(nil)

func refuse(msg string) error { return &sdk.ProposalError{Message: msg} }

// refusal turns guildcfg's refusals into the port's *sdk.ProposalError.
func refusal(err error) error {
	var te *guildcfg.TargetError
	var ve *guildcfg.ValidationError
	var ce *guildcfg.ConflictError
	switch {
	case errors.As(err, &te):
		return refuse(te.Message)
	case errors.As(err, &ve):
		return refuse(ve.Message)
	case errors.As(err, &ce):
		return refuse(guildcfg.MsgConflict)
	}
	return err
}

// resolve parses target and checks it belongs to the actor's guild and, for
// module settings, names a known module. It returns the target and its
// guild.
func (s *Service) resolve(ctx context.Context, raw string, actor sdk.ProposalActor) (guildcfg.Target, error) {
	if actor.GuildID == 0 {
		return guildcfg.Target{}, refuse(MsgNoActorGuild)
	}
	t, err := guildcfg.ParseTarget(raw)
	if err != nil {
		return guildcfg.Target{}, refusal(err)
	}
	guildID := t.GuildID
	if t.Kind == guildcfg.KindChannel {
		if s.discord == nil {
			return guildcfg.Target{}, refuse(MsgForeignTarget)
		}
		g, err := s.discord.ChannelGuild(ctx, t.ChannelID)
		if err != nil || g == 0 {
			return guildcfg.Target{}, refuse(MsgForeignTarget)
		}
		guildID = g
	}
	if guildID != actor.GuildID {
		return guildcfg.Target{}, refuse(MsgForeignTarget)
	}
	if t.Kind == guildcfg.KindGuildModule && s.known != nil && !s.known(t.Module) {
		return guildcfg.Target{}, refuse("unknown module " + hostkit.Repr(t.Module))
	}
	return t, nil
}

func (p *port) Snapshot(ctx context.Context, target string, actor sdk.ProposalActor) (sdk.ConfigSnapshot, error) {
	t, err := p.s.resolve(ctx, target, actor)
	if err != nil {
		return sdk.ConfigSnapshot{}, err
	}
	doc, err := p.s.guilds.Document(ctx, t)
	if err != nil {
		return sdk.ConfigSnapshot{}, refusal(err)
	}
	return sdk.ConfigSnapshot{Target: t.String(), Revision: doc.Revision, Content: doc.Text}, nil
}

func (p *port) Propose(ctx context.Context, prop sdk.Proposal) (sdk.ProposalRef, error) {
	return p.s.propose(ctx, p.module, prop)
}

func (p *port) Get(ctx context.Context, proposalID string, actor sdk.ProposalActor) (*sdk.ProposalRef, error) {
	if actor.GuildID == 0 {
		return nil, refuse(MsgNoActorGuild)
	}
	if !validID(proposalID) {
		return nil, nil
	}
	pr, err := readProposal(ctx, p.s.st.Reader(), proposalID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if pr.GuildID != actor.GuildID {
		return nil, nil
	}
	ref := pr.ref()
	return &ref, nil
}

// ref is the proposal as the port describes it.
func (p Proposal) ref() sdk.ProposalRef {
	r := sdk.ProposalRef{ID: p.ID, Target: p.Target.String(), State: p.State, DecidedBy: p.DecidedByUser, DecisionReason: p.DecisionReason}
	if p.Card.MessageID != 0 {
		card := p.Card
		r.Message = &card
	}
	return r
}

// propose is Propose for module.
func (s *Service) propose(ctx context.Context, module string, in sdk.Proposal) (sdk.ProposalRef, error) {
	t, err := s.resolve(ctx, in.Target, in.Actor)
	if err != nil {
		return sdk.ProposalRef{}, err
	}
	if err := in.Validate(); err != nil {
		return sdk.ProposalRef{}, err
	}
	if err := s.guilds.Validate(t, in.Content); err != nil {
		return sdk.ProposalRef{}, refusal(err)
	}
	live, err := s.guilds.Document(ctx, t)
	if err != nil {
		return sdk.ProposalRef{}, refusal(err)
	}
	if in.ExpectedRevision != "" && in.ExpectedRevision != live.Revision {
		return sdk.ProposalRef{}, refuse(guildcfg.MsgConflict)
	}
	channel, err := s.reviewChannel(ctx, in.Actor)
	if err != nil {
		return sdk.ProposalRef{}, err
	}
	id, err := newID()
	if err != nil {
		return sdk.ProposalRef{}, err
	}
	now := s.now()
	p := Proposal{
		ID: id, GuildID: in.Actor.GuildID, Target: t, Module: module, Summary: strings.TrimSpace(in.Summary),
		Content: in.Content, ContentRevision: guildcfg.Revision(in.Content),
		BaseExists: live.Exists, BaseContent: live.Text, BaseRevision: live.Revision,
		Actor: in.Actor, State: sdk.ProposalPending, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.insert(ctx, p); err != nil {
		return sdk.ProposalRef{}, err
	}
	var ref sdk.MessageRef
	if s.discord != nil {
		embed, buttons := renderCard(p)
		ref, err = s.discord.PostCard(ctx, p.GuildID, channel, embed, buttons)
	} else {
		err = errors.New("no Discord connection")
	}
	if err != nil {
		s.log.Warn("posting the review card failed; the proposal is not kept", "proposal", id, "channel", channel, "err", err)
		if rerr := s.remove(context.WithoutCancel(ctx), id); rerr != nil {
			return sdk.ProposalRef{}, fmt.Errorf("proposals: drop %s after its card failed: %w", id, rerr)
		}
		return sdk.ProposalRef{}, refuse(MsgCardFailed)
	}
	if err := s.attachCard(ctx, id, ref); err != nil {
		return sdk.ProposalRef{}, err
	}
	p.Card = ref
	s.log.Info("proposal created", "proposal", id, "guild", p.GuildID, "target", t.String(), "module", module)
	s.changed()
	s.notifyNew(p)
	return p.ref(), nil
}

// reviewChannel is the guild's proposal_channel_id, else the actor's
// channel; it must be a channel of the actor's guild.
func (s *Service) reviewChannel(ctx context.Context, actor sdk.ProposalActor) (uint64, error) {
	channel := actor.ChannelID
	doc, err := s.guilds.Document(ctx, guildcfg.GuildTarget(actor.GuildID))
	if err != nil {
		return 0, err
	}
	if doc.Guild != nil && doc.Guild.ProposalChannelID != 0 {
		channel = doc.Guild.ProposalChannelID
	}
	if channel == 0 || s.discord == nil {
		return 0, refuse(MsgNoReviewChannel)
	}
	g, err := s.discord.ChannelGuild(ctx, channel)
	if err != nil || g != actor.GuildID {
		return 0, refuse(MsgNoReviewChannel)
	}
	return channel, nil
}
