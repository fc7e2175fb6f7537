package assistant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/internal/chunk"
	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Reactions on the trigger (the original's, reference assistant.md §10).
const (
	ReactWorking = "⏳"
	ReactDone    = "✅"
	ReactFailed  = "❌"
	ReactStopped = "🛑"
)

// The original's endings of a turn (reference assistant.md §4.6 and §10).
const (
	LengthNotice       = "(Response was cut off due to length limits.)"
	EmptyAnswerText    = "I'm not sure how to respond to that."
	IterationCapText   = "I ran out of steps trying to help. Could you try rephrasing your question?"
	EarlierToolsSuffix = " Earlier tool actions may already have completed, so check their result before repeating them."
)

// TimeoutText is the original's answer when the whole-turn deadline d
// passed.
func TimeoutText(d time.Duration) string {
	return "Sorry, that took too long and I timed out after " + durationText(d) + ". Try again with a narrower request."
}

// timeoutToolResult answers a tool call that never ran before the deadline.
func timeoutToolResult(d time.Duration) string {
	return "Tool call did not run because the turn timed out after " + durationText(d) + "."
}

// Error kinds of a finished turn.
const (
	KindProvider     = "provider"
	KindDeadline     = "deadline"
	KindIterationCap = "iteration_cap"
	KindDelivery     = "delivery"
	KindCancelled    = "cancelled"
	KindStorage      = "storage"
)

// cleanupTimeout bounds the ending's Discord and store calls, which run
// after the turn's own context may have ended (deadline, STOP).
const cleanupTimeout = 30 * time.Second

var (
	errStopped  = errors.New("assistant: the turn was stopped")
	errDeadline = errors.New("assistant: the turn's deadline passed")
	errClosed   = errors.New("assistant: shutting down")
)

// ProviderSource gives the model provider of a new turn (*Service); nil
// when none is configured.
type ProviderSource interface {
	Provider() llm.Provider
}

var _ ProviderSource = (*Service)(nil)

// CallRecorder counts the turns' model calls on /assistant's status card
// (*Service, whose Recorder Test connection feeds too).
type CallRecorder interface {
	RecordTurnCall(resp llm.Response, err error, latency time.Duration)
}

var _ CallRecorder = (*Service)(nil)

// PolicySource is the guilds' assistant policy (*guildcfg.Service).
type PolicySource interface {
	AssistantFor(guildID, channelID, parentID uint64) (guildcfg.AssistantPolicy, bool)
}

var _ PolicySource = (*guildcfg.Service)(nil)

// Identity is the bot's own user id and name (known once the gateway is
// ready); the turn reads it at start.
type Identity func() (id uint64, name string)

// AssistantOptions configure NewAssistant.
type AssistantOptions struct {
	// Store is the conversation storage (required).
	Store *Conversations
	// Provider gives each turn its model (required).
	Provider ProviderSource
	// Calls counts each model call on the status card (nil: not counted).
	Calls CallRecorder
	// Tools is the module host (required).
	Tools ToolHost
	// Guilds is the guilds' policy (nil: no blocked or pinned tools and no
	// server instructions).
	Guilds PolicySource
	// Settings holds the behaviour settings (persona, deadline, iteration
	// cap), read at each turn's start (required).
	Settings settings.Store
	// Identity is the bot's id and name (nil: 0 and "Kimi").
	Identity Identity
	// Clock is the turn's time (nil: SystemClock).
	Clock  Clock
	Logger *slog.Logger
	// MaxTurns, MaxTurnsPerUser and MaxModelCalls override the defaults
	// (16, 2, 8) when > 0.
	MaxTurns, MaxTurnsPerUser, MaxModelCalls int
}

// Assistant runs turns: admission, the tool-calling loop, progress and
// delivery. Safe for concurrent use.
type Assistant struct {
	o      AssistantOptions
	log    *slog.Logger
	clock  Clock
	admit  admission
	calls  chan struct{} // the provider-call semaphore
	active registry
	rate   rateWindow // the members' turns in RateWindow (limits.go)

	base   context.Context
	stop   context.CancelCauseFunc
	wg     sync.WaitGroup
	closed sync.Once
	// mu orders spawn's Add before Close's Wait: closing, set under it,
	// refuses every later spawn.
	mu      sync.Mutex
	closing bool
}

// NewAssistant returns an Assistant; Close ends its running turns.
func NewAssistant(o AssistantOptions) (*Assistant, error) {
	switch {
	case o.Store == nil:
		return nil, errors.New("assistant: new assistant: no conversation store")
	case o.Provider == nil:
		return nil, errors.New("assistant: new assistant: no provider source")
	case o.Tools == nil:
		return nil, errors.New("assistant: new assistant: no tool host")
	case o.Settings == nil:
		return nil, errors.New("assistant: new assistant: no settings store")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Identity == nil {
		o.Identity = func() (uint64, string) { return 0, "Kimi" }
	}
	o.MaxTurns = cmpOr(o.MaxTurns, DefaultMaxTurns)
	o.MaxTurnsPerUser = cmpOr(o.MaxTurnsPerUser, DefaultMaxTurnsPerUser)
	o.MaxModelCalls = cmpOr(o.MaxModelCalls, DefaultMaxModelCalls)
	a := &Assistant{o: o, log: o.Logger, clock: o.Clock, calls: make(chan struct{}, o.MaxModelCalls),
		admit:  admission{max: o.MaxTurns, perUser: o.MaxTurnsPerUser, users: map[uint64]int{}},
		active: registry{turns: map[*running]struct{}{}}}
	a.base, a.stop = context.WithCancelCause(context.Background())
	return a, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Close cancels the running turns and waits for them to end (bounded by
// ctx).
func (a *Assistant) Close(ctx context.Context) error {
	a.closed.Do(func() {
		a.mu.Lock()
		a.closing = true
		a.mu.Unlock()
		a.stop(errClosed)
	})
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("assistant: close: %w", ctx.Err())
	}
}

// Recover marks the turns a crash left running as interrupted and returns
// them, for the Discord side to remove their ⏳ and delete the status
// message they left (their triggers get no answer, so none is posted
// twice). Call it once at start, before the first Handle.
func (a *Assistant) Recover(ctx context.Context) ([]Interrupted, error) {
	return a.o.Store.MarkInterrupted(ctx)
}

// Ready reports whether Handle can start a turn now: a model provider is
// configured and the assistant is not closing. Handle drops a trigger
// otherwise; /ask asks first, so as to answer rather than defer.
func (a *Assistant) Ready() bool { return a.base.Err() == nil && a.o.Provider.Provider() != nil }

// Handle starts a turn for in on s and returns at once: admission never
// waits. Refused (too many turns at once, or the caller's two already
// running), the trigger gets BusyText through s.Busy. ctx bounds nothing
// of the turn (which outlives the event); its values are not used. s must
// be safe for concurrent use: the status throttle's timer calls Status
// from its own goroutine.
func (a *Assistant) Handle(ctx context.Context, in Incoming, s Surface) {
	// The assistant answers once a provider is configured (issue 25 item
	// 7): until then a trigger costs nothing and leaves no row.
	if !a.Ready() {
		return
	}
	if in.ContinuationOnly {
		// An unpinged reply to anything but one of Kimi's answers (a
		// module's post, say) is not addressed to the assistant.
		ok, err := a.o.Store.Continues(a.base, in.Place.ChannelID, in.ReplyToID, in.UserID)
		if err != nil {
			a.log.Warn("routing an unpinged reply failed; it is dropped", "err", err)
		}
		if !ok {
			return
		}
	}
	if !a.admit.acquire(in.UserID) {
		a.spawn(func() { a.busy(in, s) })
		return
	}
	tctx, cancel := context.WithCancelCause(a.base)
	r := &running{user: in.UserID, channel: in.Place.ChannelID, cancel: cancel, done: make(chan struct{})}
	end := func() {
		a.active.remove(r)
		a.admit.release(in.UserID)
		cancel(nil)
		close(r.done)
	}
	a.active.add(r)
	if !a.spawn(func() {
		defer end()
		a.turn(tctx, in, s)
	}) {
		end()
	}
}

// spawn runs f as one of the turns' goroutines, which Close waits for,
// unless Close has begun (then it reports false and f never runs): a
// trigger that passed Ready as Close began starts nothing after it.
func (a *Assistant) spawn(f func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return false
	}
	a.wg.Go(f)
	return true
}

func (a *Assistant) busy(in Incoming, s Surface) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.base), cleanupTimeout)
	defer cancel()
	if err := a.o.Store.RecordRefusal(ctx, in.Place.GuildID, in.UserID, UsageBusy); err != nil {
		a.log.Warn("counting a busy refusal failed", "err", err)
	}
	if err := s.Busy(ctx, BusyText); err != nil {
		a.log.Warn("busy reply failed", "err", err)
	}
}

// outcome is how the loop ended.
type outcome struct {
	text      string // the answer to deliver ("" for none)
	status    string
	errorKind string
	usageKind string // the roll-up's error kind ("": from errorKind)
}

// turn runs one admitted turn to its end.
func (a *Assistant) turn(ctx context.Context, in Incoming, s Surface) {
	start := a.clock.Now()
	log := a.log.With("user", in.UserID, "channel", in.Place.ChannelID, "trigger", in.MessageID)
	cleanup := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	}
	botID, botName := a.o.Identity()
	beh, err := settings.LoadAssistantBehaviour(ctx, a.o.Settings)
	if err != nil {
		log.Warn("behaviour settings unreadable, using the defaults", "err", err)
		beh = settings.DefaultAssistantBehaviour()
	}
	deadline := beh.TurnDeadline
	if deadline <= 0 {
		deadline = settings.DefaultTurnDeadline
	}
	iterCap := cmpOr(beh.IterationCap, settings.DefaultIterationCap)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := a.clock.AfterFunc(deadline, func() { cancel(errDeadline) })
	defer timer.Stop()

	// The limits refuse before any row, reaction or provider call.
	if r, ok := a.limit(ctx, in, log); !ok {
		cctx, ccancel := cleanup()
		defer ccancel()
		a.refuse(cctx, in, s, r, log)
		return
	}
	trig := Trigger{Place: in.Place, Kind: in.Kind, MessageID: in.MessageID, ReplyTo: in.ReplyToID, AuthorID: in.UserID,
		AuthorName: in.DisplayName, Text: in.Text, OwnerOnly: in.Private}
	conv, err := a.o.Store.Open(ctx, trig)
	if err != nil {
		log.Error("opening the conversation failed", "err", err)
		a.react(ctx, s, ReactFailed, log)
		return
	}
	names := selfNames{account: botName, assistant: beh.NameOr(botName)}
	turnID, err := a.o.Store.BeginTurn(ctx, conv, trig, names.reserved()...)
	if errors.Is(err, ErrTurnRunning) {
		a.busy(in, s)
		return
	}
	if err != nil {
		log.Error("beginning the turn failed", "err", err)
		a.react(ctx, s, ReactFailed, log)
		return
	}
	log = log.With("turn", int64(turnID))
	a.react(ctx, s, ReactWorking, log)
	// The status message is recorded as soon as it is sent: a crash
	// that leaves it standing lets the next start delete it (Recover).
	prog := newProgress(ctx, s, a.clock, log, func(id uint64) {
		if err := a.o.Store.SetStatusMessage(ctx, turnID, id); err != nil {
			log.Warn("could not record the status message", "message_id", id, "err", err)
		}
	})
	prog.set(ThinkingText)

	out := a.converse(ctx, in, conv, turnID, beh.PersonaFor(botName), names, deadline, iterCap, prog, log)

	cctx, ccancel := cleanup()
	defer ccancel()
	if out.status == StatusCancelled {
		prog.close(cctx)
		a.finish(cctx, turnID, Finish{Status: StatusCancelled, ErrorKind: KindCancelled, BotID: botID}, log)
		a.unreact(cctx, s, ReactWorking, log)
		a.react(cctx, s, ReactStopped, log)
		return
	}
	// Delivery runs on the cleanup context (a deadline passing now does
	// not cut the answer), but a STOP (or shutdown) still ends it between
	// chunks: the chunks posted stay, the rest are not sent.
	stopped := func() bool { c := context.Cause(ctx); return c == errStopped || c == errClosed }
	delivered, end := a.deliver(cctx, stopped, s, conv, in.Place.ChannelID, out.text, log)
	prog.close(cctx)
	switch end {
	case deliveryStopped:
		log.Info("the turn was stopped during delivery", "delivered_chars", len(delivered))
		a.finish(cctx, turnID, Finish{Status: StatusCancelled, ErrorKind: KindCancelled, Reply: delivered, BotID: botID}, log)
		a.unreact(cctx, s, ReactWorking, log)
		a.react(cctx, s, ReactStopped, log)
		return
	case deliveryFailed:
		out.status, out.errorKind, out.usageKind = StatusFailed, KindDelivery, ""
	}
	a.finish(cctx, turnID, Finish{Status: out.status, ErrorKind: out.errorKind, UsageKind: out.usageKind, Reply: delivered, BotID: botID}, log)
	a.unreact(cctx, s, ReactWorking, log)
	if out.status == StatusDone {
		a.react(cctx, s, ReactDone, log)
	} else {
		a.react(cctx, s, ReactFailed, log)
	}
	log.Debug("turn ended", "status", out.status, "error_kind", out.errorKind, "took", a.clock.Now().Sub(start))
}

// converse builds the request and runs the tool-calling loop.
func (a *Assistant) converse(ctx context.Context, in Incoming, conv Conversation, turnID TurnID, persona string, names selfNames,
	deadline time.Duration, iterCap int, prog *progress, log *slog.Logger) outcome {
	// ended is the ending once the turn's context has ended: STOP (or
	// shutdown) cancels, the deadline times out.
	ended := func() (outcome, bool) {
		switch context.Cause(ctx) {
		case nil:
			return outcome{}, false
		case errStopped, errClosed:
			return outcome{status: StatusCancelled}, true
		}
		return outcome{text: TimeoutText(deadline), status: StatusFailed, errorKind: KindDeadline}, true
	}
	storageFailed := func(what string, err error) outcome {
		if out, done := ended(); done {
			return out
		}
		log.Error(""+what+" failed", "err", err)
		return outcome{text: llm.UserMessage(llm.OutcomeInternal), status: StatusFailed, errorKind: KindStorage}
	}
	var policy guildcfg.AssistantPolicy
	if in.Place.GuildID != 0 && a.o.Guilds != nil {
		policy, _ = a.o.Guilds.AssistantFor(in.Place.GuildID, in.Place.ChannelID, in.Place.ParentID)
	}
	history, err := a.o.Store.History(ctx, conv)
	if err != nil {
		return storageFailed("reading the history", err)
	}
	activated, err := a.o.Store.ActivatedTools(ctx, conv)
	if err != nil {
		return storageFailed("reading the activated tools", err)
	}
	tools := NewTools(a.o.Tools, callerOf(in), Policy{Blocked: policy.BlockedTools, Pinned: policy.PinnedTools}, activated, log)
	system := systemPrompt(promptInput{Persona: persona, Names: names, CallerName: SanitizeName(in.DisplayName, names.reserved()...),
		CallerID: in.UserID, Tier: in.Tier, Owner: in.Owner, GuildName: in.GuildName, ChannelName: in.ChannelName,
		DM: in.Place.GuildID == 0, Instructions: policy.Instructions, Date: a.clock.Now()})
	req := llm.Request{Messages: turnMessages(system, history, in, names), Tools: tools.Offered()}

	provider := a.o.Provider.Provider()
	if provider == nil {
		return outcome{text: llm.UserMessage(llm.OutcomeUnavailable), status: StatusFailed, errorKind: KindProvider}
	}
	if ch, ok := provider.(*llm.Chain); ok {
		provider = ch.Turn() // tool iterations stay on the backend that served
	}
	// Records outlive the turn's context: a call billed or a tool run
	// before the deadline or a STOP is still written.
	rec := context.WithoutCancel(ctx)
	toolRan := false
	seq := 0
	for iter := 1; ; iter++ {
		prog.set(ThinkingText)
		resp, err := a.complete(ctx, provider, req)
		if err == nil {
			// Recorded as it arrives, before asking whether the turn
			// ended meanwhile: a response that came back is billed.
			u := resp.Usage
			if err := a.o.Store.RecordUsage(rec, turnID, Usage{Model: resp.ServedModel, PromptTokens: int64(u.PromptTokens),
				CompletionTokens: int64(u.CompletionTokens), CachedTokens: int64(u.CachedTokens)}); err != nil {
				log.Warn("recording usage failed", "err", err)
			}
		}
		if out, done := ended(); done {
			return out
		}
		if err != nil {
			log.Warn("the model call failed", "err", err)
			_, o := llm.Classify(err)
			text := llm.UserMessage(o)
			if toolRan {
				text += EarlierToolsSuffix
			}
			return outcome{text: text, status: StatusFailed, errorKind: KindProvider, usageKind: providerUsageKind(err)}
		}
		if len(resp.ToolCalls) == 0 {
			return outcome{text: finalText(resp), status: StatusDone}
		}
		// The assistant message exactly as received, reasoning included:
		// Kimi's thinking models refuse a replay without it. Only a call
		// whose name never arrived is named, as UnnamedTool.
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content,
			ToolCalls: replayedCalls(resp.ToolCalls), ReasoningContent: resp.Reasoning})
		for i, call := range resp.ToolCalls {
			if _, done := ended(); done {
				// Calls that never ran get synthetic results, so the
				// transcript stays well-formed.
				for _, c := range resp.ToolCalls[i:] {
					seq++
					a.recordCall(rec, turnID, seq, c, Result{Outcome: OutcomeTimeout, Content: timeoutToolResult(deadline)}, 0, log)
					req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: timeoutToolResult(deadline)})
				}
				break
			}
			prog.set(toolLabel(tools, call.Name) + "...")
			before := tools.Activated()
			began := a.clock.Now()
			res := tools.Run(ctx, call)
			seq++
			a.recordCall(rec, turnID, seq, call, res, a.clock.Now().Sub(began), log)
			if res.Outcome == OutcomeOK || res.Outcome == OutcomeTruncated || res.Outcome == OutcomeFailed {
				toolRan = true
			}
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: res.Content})
			if call.Name == BrowseTools {
				if added := newNames(before, tools.Activated()); len(added) > 0 {
					if err := a.o.Store.ActivateTools(rec, conv, added...); err != nil {
						log.Warn("persisting activated tools failed", "err", err)
					}
				}
			}
		}
		if out, done := ended(); done {
			return out
		}
		if iter >= iterCap {
			return outcome{text: IterationCapText, status: StatusFailed, errorKind: KindIterationCap}
		}
		req.Tools = tools.Offered()
	}
}

// replayedCalls are calls as the next request carries them: as received,
// a nameless one named UnnamedTool (a request refuses a call without a
// name, which would end the turn instead of correcting the model).
func replayedCalls(calls []llm.ToolCall) []llm.ToolCall {
	if !slices.ContainsFunc(calls, func(c llm.ToolCall) bool { return c.Name == "" }) {
		return calls
	}
	out := slices.Clone(calls)
	for i := range out {
		if out[i].Name == "" {
			out[i].Name = UnnamedTool
		}
	}
	return out
}

// complete is one provider call under the provider-call semaphore.
func (a *Assistant) complete(ctx context.Context, p llm.Provider, req llm.Request) (llm.Response, error) {
	select {
	case a.calls <- struct{}{}:
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	defer func() { <-a.calls }()
	began := a.clock.Now()
	resp, err := p.Complete(ctx, req, nil)
	// A call the turn's STOP, deadline or shutdown cut short is no
	// provider error.
	if a.o.Calls != nil && (err == nil || ctx.Err() == nil) {
		latency := resp.Latency
		if err != nil || latency <= 0 {
			latency = a.clock.Now().Sub(began)
		}
		a.o.Calls.RecordTurnCall(resp, err, latency)
	}
	return resp, err
}

// finalText is the answer of a response without tool calls: the length
// notice after a cut, the empty-answer text for nothing.
func finalText(resp llm.Response) string {
	text := strings.TrimSpace(resp.Content)
	if resp.FinishReason == "length" {
		if text == "" {
			return LengthNotice
		}
		return text + "\n\n" + LengthNotice
	}
	if text == "" {
		return EmptyAnswerText
	}
	return text
}

// toolLabel is the running tool's progress label: the module's, else the
// title-cased name.
func toolLabel(t *Tools, name string) string {
	if l := t.Label(name); l != "" {
		return l
	}
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == ' ' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	if len(words) == 0 {
		return "Working"
	}
	return strings.Join(words, " ")
}

func newNames(before, after []string) []string {
	var out []string
	for _, n := range after {
		if !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}

func callerOf(in Incoming) Caller {
	c := Caller{UserID: in.UserID, UserName: in.DisplayName, GuildID: in.Place.GuildID, ChannelID: in.Place.ChannelID, Tier: in.Tier}
	if in.Place.ParentID != 0 {
		c.ChannelID, c.ThreadID = in.Place.ParentID, in.Place.ChannelID
	}
	if in.Kind == KindMessage {
		c.Trigger = &sdk.TriggeringMessageSnapshot{MessageID: in.MessageID, GuildID: in.Place.GuildID,
			ChannelID: in.Place.ChannelID, AuthorID: in.UserID, Content: in.Text}
	}
	return c
}

func (a *Assistant) recordCall(ctx context.Context, turn TurnID, seq int, call llm.ToolCall, res Result, d time.Duration, log *slog.Logger) {
	name := call.Name
	if name == "" || len(name) > 64 {
		name = clip(strings.ToValidUTF8(name, "?"), 64)
		if name == "" {
			name = "(none)"
		}
	}
	if err := a.o.Store.RecordToolCall(ctx, turn, ToolCall{Seq: seq, Tool: name, Module: res.Module, Outcome: res.Outcome,
		Duration: d, Arguments: call.Arguments, Result: res.Content}); err != nil {
		log.Warn("recording a tool call failed", "err", err)
	}
}

// deliveryEnd is how a delivery ended.
type deliveryEnd int

const (
	deliveryDone    deliveryEnd = iota // every chunk sent
	deliveryFailed                     // a chunk failed twice
	deliveryStopped                    // the turn was stopped before a chunk
)

// deliver sends the answer in chunks, each retried once, and checks
// stopped before each chunk: a STOP during delivery leaves the chunks
// already posted and sends no more. It returns the text delivered and
// how delivery ended.
func (a *Assistant) deliver(ctx context.Context, stopped func() bool, s Surface, conv Conversation, channelID uint64, text string,
	log *slog.Logger) (string, deliveryEnd) {
	var sent []string
	for i, c := range chunk.Message(text) {
		if stopped() {
			return strings.Join(sent, "\n"), deliveryStopped
		}
		id, err := s.Deliver(ctx, c, i == 0)
		if err != nil {
			log.Warn("delivering a chunk failed, retrying once", "chunk", i+1, "err", err)
			id, err = s.Deliver(ctx, c, i == 0)
		}
		if err != nil {
			log.Error("delivering the answer failed", "chunk", i+1, "err", err)
			return strings.Join(sent, "\n"), deliveryFailed
		}
		sent = append(sent, c)
		if id != 0 {
			if err := a.o.Store.RecordDelivered(ctx, conv, channelID, id); err != nil {
				log.Warn("recording a delivered message failed", "err", err)
			}
		}
	}
	return strings.Join(sent, "\n"), deliveryDone
}

func (a *Assistant) finish(ctx context.Context, turn TurnID, f Finish, log *slog.Logger) {
	if err := a.o.Store.FinishTurn(ctx, turn, f); err != nil {
		log.Error("finishing the turn failed", "err", err)
	}
}

func (a *Assistant) react(ctx context.Context, s Surface, emoji string, log *slog.Logger) {
	if err := s.React(ctx, emoji); err != nil {
		log.Warn("reaction failed", "emoji", emoji, "err", err)
	}
}

func (a *Assistant) unreact(ctx context.Context, s Surface, emoji string, log *slog.Logger) {
	if err := s.Unreact(ctx, emoji); err != nil {
		log.Warn("removing a reaction failed", "emoji", emoji, "err", err)
	}
}
