package fakediscord

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Interaction is the fake's record of one interaction a user started.
type Interaction struct {
	ID, Token string
	Type      discordgo.InteractionType
	GuildID   string
	ChannelID string
	UserID    string
	// SourceMessageID is the message a component sits on (component interactions).
	SourceMessageID string
	// Response is the first callback the client sent (nil until it answers).
	Response *discordgo.InteractionResponse
	// Callbacks counts every callback attempt, accepted or refused.
	Callbacks int
	// OriginalID is the response message's id (type 4/5), or the source message (6/7).
	OriginalID string
	// FollowupIDs are the follow-up messages, in order.
	FollowupIDs []string
	// ModalSubmitIDs are the modal-submit interactions of the modal this one was answered with
	// (SubmitModal), in order.
	ModalSubmitIDs []string

	// Created is when the user started it (the fake's clock).
	Created time.Time
	// Data is what the user sent: ApplicationCommandInteractionData (options included),
	// MessageComponentInteractionData (custom id, values) or ModalSubmitInteractionData.
	Data discordgo.InteractionData

	ephemeral map[string]*discordgo.Message // messages only the user sees: not in the channel
	raw       *discordgo.Interaction
	called    chan struct{} // closed at the first callback attempt (Autocomplete waits on it)
}

// InteractionState is an interaction as a test inspects it.
type InteractionState struct {
	Interaction
	// Original and Followups are the response messages as they are now.
	Original  *discordgo.Message
	Followups []*discordgo.Message
}

// Discord's interaction timing.
const (
	// DiscordInteractionDeadline is how long Discord waits for an interaction's first callback.
	DiscordInteractionDeadline = 3 * time.Second
	// InteractionTokenLifetime is how long the interaction token serves follow-ups and edits.
	InteractionTokenLifetime = 15 * time.Minute
)

// Interaction returns the state of an interaction by id, or nil.
func (s *Server) Interaction(id string) *InteractionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.inters[id]
	if in == nil {
		return nil
	}
	st := &InteractionState{Interaction: *in}
	st.Response = cloneResponse(in.Response)
	st.FollowupIDs = slices.Clone(in.FollowupIDs)
	st.ModalSubmitIDs = slices.Clone(in.ModalSubmitIDs)
	st.ephemeral, st.raw, st.called = nil, nil, nil
	if m, _ := s.interMessage(in, in.OriginalID); m != nil {
		st.Original = cloneMessage(m)
	}
	for _, id := range in.FollowupIDs {
		if m, _ := s.interMessage(in, id); m != nil {
			st.Followups = append(st.Followups, cloneMessage(m))
		}
	}
	return st
}

// interMessage finds one of an interaction's messages: ephemeral, or in its channel.
func (s *Server) interMessage(in *Interaction, id string) (*discordgo.Message, *channel) {
	if id == "" {
		return nil, nil
	}
	if m := in.ephemeral[id]; m != nil {
		return m, nil
	}
	// A component on an ephemeral response another interaction of the same
	// user was answered with (Discord lets its clicks update it).
	if m := s.ephemeralOf(in.ChannelID, in.UserID, id); m != nil {
		return m, nil
	}
	ch := s.channels[in.ChannelID]
	if ch == nil {
		return nil, nil
	}
	_, m := ch.message(id)
	if m == nil {
		return nil, nil
	}
	return m, ch
}

// allowedResponses are the callback types Discord accepts per interaction type.
var allowedResponses = map[discordgo.InteractionType][]discordgo.InteractionResponseType{
	discordgo.InteractionPing:                           {discordgo.InteractionResponsePong},
	discordgo.InteractionApplicationCommand:             {4, 5, 9},
	discordgo.InteractionMessageComponent:               {4, 5, 6, 7, 9},
	discordgo.InteractionApplicationCommandAutocomplete: {8},
	discordgo.InteractionModalSubmit:                    {4, 5, 6, 7},
}

func (s *Server) interactionCallback(c *call) (int, any, *apiError) {
	in := s.inters[c.param("interaction")]
	if in == nil || in.Token != c.param("token") {
		return 0, nil, unknown(CodeUnknownInteraction, "interaction")
	}
	in.Callbacks++
	defer in.signalCallback()
	if d := s.opts.InteractionDeadline; d > 0 && in.Response == nil && s.now().Sub(in.Created) > d {
		return 0, nil, unknown(CodeUnknownInteraction, "interaction")
	}
	if in.Response != nil {
		return 0, nil, &apiError{status: 400, Code: CodeAlreadyAcknowledged, Message: "Interaction has already been acknowledged."}
	}
	var b struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data json.RawMessage                   `json:"data"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if !slices.Contains(allowedResponses[in.Type], b.Type) {
		return 0, nil, invalidForm("type", "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is invalid for this interaction")
	}
	resp := discordgo.InteractionResponse{Type: b.Type}
	if len(b.Data) > 0 && string(b.Data) != "null" {
		d, err := decodeResponseData(b.Data)
		if err != nil {
			return 0, nil, invalidForm("data", "MODEL_TYPE_CONVERT", "Could not interpret the body as JSON.")
		}
		resp.Data = d
	}
	sub := &call{r: c.r, body: b.Data, files: c.files, route: c.route}
	switch b.Type {
	case discordgo.InteractionResponseChannelMessageWithSource, discordgo.InteractionResponseDeferredChannelMessageWithSource:
		ch := s.channels[in.ChannelID]
		if ch == nil {
			return 0, nil, unknown(CodeUnknownChannel, "Channel")
		}
		var m *discordgo.Message
		if b.Type == discordgo.InteractionResponseChannelMessageWithSource {
			var err *apiError
			if m, err = s.buildMessage(sub, ch, s.bot); err != nil {
				return 0, nil, err
			}
		} else {
			var d struct {
				Flags discordgo.MessageFlags `json:"flags"`
			}
			_ = json.Unmarshal(b.Data, &d)
			m = &discordgo.Message{ID: s.newID(), ChannelID: ch.c.ID, GuildID: ch.c.GuildID, Author: s.bot,
				Timestamp: s.now().UTC(), Flags: d.Flags | discordgo.MessageFlagsLoading, Embeds: []*discordgo.MessageEmbed{}}
		}
		m.Type = discordgo.MessageTypeChatInputCommand
		if in.Type != discordgo.InteractionApplicationCommand {
			m.Type = discordgo.MessageTypeReply
		}
		m.Interaction = &discordgo.MessageInteraction{ID: in.ID, Type: in.Type, Name: commandPath(in.raw), User: s.users[in.UserID]}
		s.keepResponse(in, ch, m)
		in.OriginalID = m.ID
	case discordgo.InteractionResponseDeferredMessageUpdate:
		in.OriginalID = in.SourceMessageID
	case discordgo.InteractionResponseUpdateMessage:
		m, ch := s.interMessage(in, in.SourceMessageID)
		if m == nil {
			return 0, nil, unknown(CodeUnknownMessage, "Message")
		}
		if err := s.applyEdit(sub, m); err != nil {
			return 0, nil, err
		}
		if ch != nil {
			s.dispatchMessage("MESSAGE_UPDATE", m)
		}
		in.OriginalID = m.ID
	case discordgo.InteractionResponseModal:
		var d struct {
			CustomID   string         `json:"custom_id"`
			Title      string         `json:"title"`
			Components []rawComponent `json:"components"`
		}
		_ = json.Unmarshal(b.Data, &d)
		f := fieldErrors{}
		if n := runes(d.CustomID); n < 1 || n > MaxCustomID {
			f.add("data.custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		}
		if n := runes(d.Title); n < 1 || n > 45 {
			f.add("data.title", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 45 in length.")
		}
		if n := len(d.Components); n < 1 || n > 5 {
			f.add("data.components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
		}
		if err := f.err(); err != nil {
			return 0, nil, err
		}
	case discordgo.InteractionApplicationCommandAutocompleteResult:
		var d struct {
			Choices []json.RawMessage `json:"choices"`
		}
		_ = json.Unmarshal(b.Data, &d)
		if err := validateChoices(d.Choices); err != nil {
			return 0, nil, err
		}
	}
	in.Response = &resp
	return 204, nil, nil
}

// cloneResponse deep-copies a callback, components included.
func cloneResponse(r *discordgo.InteractionResponse) *discordgo.InteractionResponse {
	if r == nil {
		return nil
	}
	out := &discordgo.InteractionResponse{Type: r.Type}
	if r.Data != nil {
		b, err := json.Marshal(r.Data)
		if err == nil {
			out.Data, _ = decodeResponseData(b)
		}
	}
	return out
}

// decodeResponseData decodes a callback's data, components included (discordgo's type has no
// decoder for them).
func decodeResponseData(raw json.RawMessage) (*discordgo.InteractionResponseData, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	comps := fields["components"]
	delete(fields, "components")
	rest, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var d discordgo.InteractionResponseData
	if err := json.Unmarshal(rest, &d); err != nil {
		return nil, err
	}
	if len(comps) > 0 && string(comps) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(comps, &list); err != nil {
			return nil, err
		}
		d.Components = []discordgo.MessageComponent{}
		for _, c := range list {
			mc, err := discordgo.MessageComponentFromJSON(c)
			if err != nil {
				return nil, err
			}
			d.Components = append(d.Components, mc)
		}
	}
	return &d, nil
}

// keepResponse stores a response message: ephemeral ones only on the interaction, others in
// the channel with a MESSAGE_CREATE.
func (s *Server) keepResponse(in *Interaction, ch *channel, m *discordgo.Message) {
	if m.Flags&discordgo.MessageFlagsEphemeral != 0 {
		in.ephemeral[m.ID] = m
		return
	}
	s.storeMessage(ch, m)
}

func (s *Server) webhookInteraction(c *call) (*Interaction, *apiError) {
	in := s.byToken[c.param("token")]
	if in == nil || c.param("app") != s.opts.AppID || in.Response == nil {
		return nil, unknown(CodeUnknownWebhook, "Webhook")
	}
	if s.now().Sub(in.Created) > InteractionTokenLifetime {
		return nil, &apiError{status: 401, Code: 50027, Message: "Invalid Webhook Token"}
	}
	return in, nil
}

func (s *Server) followup(c *call) (int, any, *apiError) {
	in, err := s.webhookInteraction(c)
	if err != nil {
		return 0, nil, err
	}
	ch := s.channels[in.ChannelID]
	if ch == nil {
		return 0, nil, unknown(CodeUnknownChannel, "Channel")
	}
	m, err := s.buildMessage(c, ch, s.bot)
	if err != nil {
		return 0, nil, err
	}
	m.WebhookID = s.opts.AppID
	s.keepResponse(in, ch, m)
	in.FollowupIDs = append(in.FollowupIDs, m.ID)
	if c.r.URL.Query().Get("wait") == "false" {
		return 204, nil, nil
	}
	return 200, wire(m), nil
}

func (s *Server) webhookTarget(c *call) (*Interaction, *discordgo.Message, *channel, *apiError) {
	in, err := s.webhookInteraction(c)
	if err != nil {
		return nil, nil, nil, err
	}
	id := c.param("message")
	if id == "@original" {
		id = in.OriginalID
	} else if !slices.Contains(in.FollowupIDs, id) {
		id = ""
	}
	m, ch := s.interMessage(in, id)
	if m == nil {
		return nil, nil, nil, unknown(CodeUnknownMessage, "Message")
	}
	return in, m, ch, nil
}

func (s *Server) webhookMessage(c *call) (int, any, *apiError) {
	_, m, _, err := s.webhookTarget(c)
	if err != nil {
		return 0, nil, err
	}
	return 200, wire(m), nil
}

func (s *Server) webhookEdit(c *call) (int, any, *apiError) {
	_, m, ch, err := s.webhookTarget(c)
	if err != nil {
		return 0, nil, err
	}
	if err := s.applyEdit(c, m); err != nil {
		return 0, nil, err
	}
	m.Flags &^= discordgo.MessageFlagsLoading
	if ch != nil {
		s.dispatchMessage("MESSAGE_UPDATE", m)
	}
	return 200, wire(m), nil
}

func (s *Server) webhookDelete(c *call) (int, any, *apiError) {
	in, m, ch, err := s.webhookTarget(c)
	if err != nil {
		return 0, nil, err
	}
	delete(in.ephemeral, m.ID)
	if ch != nil {
		i, _ := ch.message(m.ID)
		ch.msgs = slices.Delete(ch.msgs, i, i+1)
		s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE", &discordgo.MessageDelete{Message: &discordgo.Message{ID: m.ID, ChannelID: ch.c.ID, GuildID: ch.c.GuildID}})
	}
	return 204, nil, nil
}

// signalCallback wakes a waiting Autocomplete at the first callback attempt. s.mu held.
func (in *Interaction) signalCallback() {
	if in.called != nil && in.Callbacks == 1 {
		close(in.called)
	}
}

// validateChoices applies Discord's checks to an autocomplete answer: at most 25 choices, each
// name 1–100 characters and a string value of at most 100 or a number.
func validateChoices(choices []json.RawMessage) *apiError {
	if len(choices) > MaxChoices {
		return invalidForm("data.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
	f := fieldErrors{}
	for i, raw := range choices {
		var c struct {
			Name  string `json:"name"`
			Value any    `json:"value"`
		}
		p := "data.choices." + strconv.Itoa(i)
		if err := json.Unmarshal(raw, &c); err != nil {
			f.add(p, "MODEL_TYPE_CONVERT", "Could not interpret the choice.")
			continue
		}
		if n := runes(c.Name); n < 1 || n > 100 {
			f.add(p+".name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		}
		switch v := c.Value.(type) {
		case string:
			if runes(v) > 100 {
				f.add(p+".value", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
			}
		case float64:
		default:
			f.add(p+".value", "BASE_TYPE_REQUIRED", "This field is required")
		}
	}
	return f.err()
}

// commandPath is a command interaction's name as Discord shows it on the response message
// ("kudos give" for a subcommand), "" for other interactions.
func commandPath(raw *discordgo.Interaction) string {
	if raw == nil {
		return ""
	}
	d, ok := raw.Data.(discordgo.ApplicationCommandInteractionData)
	if !ok {
		return ""
	}
	path := d.Name
	for opts := d.Options; len(opts) == 1 && (opts[0].Type == discordgo.ApplicationCommandOptionSubCommand ||
		opts[0].Type == discordgo.ApplicationCommandOptionSubCommandGroup); opts = opts[0].Options {
		path += " " + opts[0].Name
	}
	return path
}
