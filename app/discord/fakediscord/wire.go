package fakediscord

import (
	"encoding/json"

	"github.com/bwmarrin/discordgo"
)

// wireMessage is a message as Discord sends it. discordgo's Message does not marshal its
// components (its field is json:"-"), so the fake writes them itself.
type wireMessage struct {
	*discordgo.Message
	Components        []discordgo.MessageComponent `json:"components"`
	ReferencedMessage *wireMessage                 `json:"referenced_message"`
}

func wire(m *discordgo.Message) *wireMessage {
	if m == nil {
		return nil
	}
	c := m.Components
	if c == nil {
		c = []discordgo.MessageComponent{}
	}
	return &wireMessage{Message: m, Components: c, ReferencedMessage: wire(m.ReferencedMessage)}
}

func wires(ms []*discordgo.Message) []*wireMessage {
	out := make([]*wireMessage, len(ms))
	for i, m := range ms {
		out[i] = wire(m)
	}
	return out
}

// cloneMessage deep-copies a message, components included.
func cloneMessage(m *discordgo.Message) *discordgo.Message {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(wire(m))
	if err != nil {
		return nil
	}
	var out discordgo.Message
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return &out
}

func cloneMessages(ms []*discordgo.Message) []*discordgo.Message {
	out := make([]*discordgo.Message, len(ms))
	for i, m := range ms {
		out[i] = cloneMessage(m)
	}
	return out
}

// wireInteraction is an INTERACTION_CREATE payload: the message with its components, and a
// modal submit's components (discordgo does not marshal either).
type wireInteraction struct {
	*discordgo.Interaction
	Message *wireMessage `json:"message,omitempty"`
	Data    any          `json:"data"`
}

type wireModalData struct {
	CustomID   string                       `json:"custom_id"`
	Components []discordgo.MessageComponent `json:"components"`
}

func wireInter(in *discordgo.Interaction) *wireInteraction {
	w := &wireInteraction{Interaction: in, Message: wire(in.Message), Data: in.Data}
	if d, ok := in.Data.(discordgo.ModalSubmitInteractionData); ok {
		w.Data = wireModalData{CustomID: d.CustomID, Components: d.Components}
	}
	return w
}
