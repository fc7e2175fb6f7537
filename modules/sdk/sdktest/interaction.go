package sdktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// MaxContent is Discord's message content limit, checked before sending.
const MaxContent = 2000

// ErrModalAfterAnswer is the host's refusal of a modal after Respond or
// Defer (a modal must be an interaction's first response).
var ErrModalAfterAnswer = errors.New("discord: a modal must be the first response to an interaction; this one was already answered or deferred")

// ResponseKind says which Interaction method produced a FakeResponse.
type ResponseKind string

// Response kinds, named as in the reference kit.
const (
	ResponseRespond  ResponseKind = "respond"
	ResponseEdit     ResponseKind = "edit"
	ResponseFollowUp ResponseKind = "follow_up"
)

// FakeResponse is one recorded reply.
type FakeResponse struct {
	sdk.Response
	Kind ResponseKind
}

// InteractionInput is what a FakeInteraction reports to the handler. Zero
// values are used as given: GuildID 0 is an interaction outside a guild.
// Module, when set, makes replies validate their controls and layout as
// the host does (custom ids built for that module). MessageUsesLayout marks
// the component's Message as one that already uses a layout (Components
// V2): EditOriginal must then keep sending one, as in the host.
type InteractionInput struct {
	Module     string
	GuildID    uint64
	ChannelID  uint64
	UserID     uint64
	GuildName  string
	Options    sdk.Options
	CustomID   string
	Values     []string
	TextValues map[string]string
	Message    *sdk.MessageRef
	// MessageUsesLayout: the message the component lives on is a Components
	// V2 message, so an edit without a layout is refused.
	MessageUsesLayout bool
}

// FakeInteraction is an sdk.Interaction that records every reply, deferral
// and modal, for calling command and component handlers in a test.
//
// It enforces the host's layout rules on every reply: content or an embed
// together with a layout is refused ("layout cannot be combined with content
// or embed"), and once the original message uses a layout — the component's
// message (InteractionInput.MessageUsesLayout), the first Respond, or an
// earlier EditOriginal — EditOriginal without one is refused ("a Components
// V2 message must continue to use layout when edited"). The first Respond
// becomes the original message unless Defer came first (a later Respond is
// a follow-up, as in the host). A refused reply is not recorded.
type FakeInteraction struct {
	in InteractionInput

	mu        sync.Mutex
	responses []FakeResponse
	deferred  *bool
	modals    []sdk.ModalSpec
	// answered: the interaction has its initial response (Respond or
	// Defer); originalLayout: the message EditOriginal edits uses a layout.
	answered       bool
	originalLayout bool
}

var _ sdk.Interaction = (*FakeInteraction)(nil)

// NewInteraction returns an interaction reporting in.
func NewInteraction(in InteractionInput) *FakeInteraction {
	in.Options = maps.Clone(in.Options)
	in.Values = slices.Clone(in.Values)
	in.TextValues = maps.Clone(in.TextValues)
	return &FakeInteraction{in: in, originalLayout: in.MessageUsesLayout}
}

// GuildID returns the guild (0 outside a guild).
func (f *FakeInteraction) GuildID() uint64 { return f.in.GuildID }

// ChannelID returns the channel.
func (f *FakeInteraction) ChannelID() uint64 { return f.in.ChannelID }

// UserID returns the invoking user.
func (f *FakeInteraction) UserID() uint64 { return f.in.UserID }

// GuildName returns the guild's name.
func (f *FakeInteraction) GuildName() string { return f.in.GuildName }

// Options returns a copy of the option values.
func (f *FakeInteraction) Options() sdk.Options { return maps.Clone(f.in.Options) }

// CustomID returns the component's custom id.
func (f *FakeInteraction) CustomID() string { return f.in.CustomID }

// Values returns the chosen select values.
func (f *FakeInteraction) Values() []string { return slices.Clone(f.in.Values) }

// TextValues returns the modal inputs.
func (f *FakeInteraction) TextValues() map[string]string { return maps.Clone(f.in.TextValues) }

// Message returns the component's message.
func (f *FakeInteraction) Message() *sdk.MessageRef { return f.in.Message }

func (f *FakeInteraction) add(r sdk.Response, kind ResponseKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The host checks the edit rule first, then the body, then the controls.
	if kind == ResponseEdit {
		if err := hostkit.ValidateLayoutEdit(f.originalLayout, r); err != nil {
			return err
		}
	}
	if err := hostkit.ValidateResponseBody(r); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(r.Content); n > MaxContent {
		return fmt.Errorf("discord: message content is %d characters, more than Discord's %d", n, MaxContent)
	}
	if f.in.Module != "" {
		if err := hostkit.ValidateMessageControls(f.in.Module, r.Components, r.Layout); err != nil {
			return err
		}
	}
	switch {
	case kind == ResponseEdit && r.Layout != nil:
		f.originalLayout = true
	case kind == ResponseRespond && !f.answered:
		f.answered = true
		f.originalLayout = r.Layout != nil
	}
	f.responses = append(f.responses, FakeResponse{Response: cloneResponse(r), Kind: kind})
	return nil
}

// Respond records a reply; the first one (without an earlier Defer) is the
// original message EditOriginal edits.
func (f *FakeInteraction) Respond(ctx context.Context, r sdk.Response) error {
	return f.add(r, ResponseRespond)
}

// Defer records the deferral and its visibility.
func (f *FakeInteraction) Defer(ctx context.Context, ephemeral bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deferred = &ephemeral
	f.answered = true
	return nil
}

// ShowModal validates and records the modal; with Module set its custom id
// is length-checked like buttons' (hostkit.ValidateModal).
func (f *FakeInteraction) ShowModal(ctx context.Context, modal sdk.ModalSpec) error {
	f.mu.Lock()
	answered := f.answered || len(f.responses) > 0
	f.mu.Unlock()
	if answered {
		return ErrModalAfterAnswer
	}
	validate := hostkit.ValidateModalSpec
	if f.in.Module != "" {
		validate = func(m sdk.ModalSpec) error { return hostkit.ValidateModal(f.in.Module, m) }
	}
	if err := validate(modal); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	modal.Inputs, modal.Parts = slices.Clone(modal.Inputs), slices.Clone(modal.Parts)
	f.modals = append(f.modals, modal)
	return nil
}

// EditOriginal records an edit of the original reply (never ephemeral); an
// edit without a layout of a message that uses one is refused.
func (f *FakeInteraction) EditOriginal(ctx context.Context, r sdk.Response) error {
	r.Ephemeral = false
	return f.add(r, ResponseEdit)
}

// FollowUp records a follow-up (components and layouts are not sent with
// follow-ups, as in the reference).
func (f *FakeInteraction) FollowUp(ctx context.Context, r sdk.Response) error {
	r.Components, r.Layout = nil, nil
	return f.add(r, ResponseFollowUp)
}

// Responses returns every recorded reply, oldest first.
func (f *FakeInteraction) Responses() []FakeResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.responses)
}

// Last returns the latest reply; ok is false when there is none.
func (f *FakeInteraction) Last() (r FakeResponse, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.responses) == 0 {
		return FakeResponse{}, false
	}
	return f.responses[len(f.responses)-1], true
}

// Deferred reports whether Defer was called, and with which visibility.
func (f *FakeInteraction) Deferred() (called, ephemeral bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deferred == nil {
		return false, false
	}
	return true, *f.deferred
}

// Modals returns the modals shown, oldest first.
func (f *FakeInteraction) Modals() []sdk.ModalSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.modals)
}
