package discord

import (
	"context"
	"errors"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/modules/sdk"
)

// CoreCommandHandler answers a core slash command whose work lives outside
// this package (e.g. the assistant's /forget). Its components' custom ids
// are in the namespace it was registered with, routed to the CoreHandler
// registered for that namespace.
type CoreCommandHandler interface {
	HandleCommand(ctx context.Context, tier sdk.TrustTier, in sdk.Interaction) error
}

// /forget (the assistant's) answers in DMs too.
var _ DirectMessageHandler = (*assistant.Forget)(nil)

// coreCommand is a registered core command's handler and the namespace
// its components' custom ids are built in.
type coreCommand struct {
	owner string
	h     CoreCommandHandler
}

// RegisterCoreCommand routes the core command name (one of
// hostkit.CoreCommands other than /ask and /stop) to h; the buttons it
// answers with get custom ids m:<owner>:… (owner one of core's
// namespaces, whose CoreHandler answers their clicks). Call it before the
// bot starts.
func (b *Bot) RegisterCoreCommand(name, owner string, h CoreCommandHandler) {
	x := b.ix
	x.mu.Lock()
	defer x.mu.Unlock()
	if !coreOwners[owner] {
		return
	}
	if x.coreCmds == nil {
		x.coreCmds = map[string]coreCommand{}
	}
	x.coreCmds[name] = coreCommand{owner: owner, h: h}
}

// runRegisteredCommand answers a core command through its registered
// handler, in a guild (in a DM only a DirectMessageHandler), or says the
// assistant is unavailable without one.
// A handler's tier refusal is answered as a module's is.
func (x *interactions) runRegisteredCommand(ctx context.Context, name string, tier sdk.TrustTier, in *interaction) error {
	x.mu.Lock()
	c, ok := x.coreCmds[name]
	x.mu.Unlock()
	switch {
	case !ok:
		return in.Respond(ctx, sdk.Response{Content: replyUnavailable, Ephemeral: true})
	case in.guildID == 0 && !inDMs(c.h):
		return in.Respond(ctx, sdk.Response{Content: replyNotAllowed, Ephemeral: true})
	}
	in.BindModule(c.owner)
	err := c.h.HandleCommand(ctx, tier, in)
	msg := x.reply(err, true)
	if msg == "" {
		return nil
	}
	if rerr := in.Respond(ctx, sdk.Response{Content: msg, Ephemeral: true}); rerr != nil {
		return errors.Join(err, rerr)
	}
	if msg == replyCommandFailed {
		return err // logged by the dispatch
	}
	return nil
}
