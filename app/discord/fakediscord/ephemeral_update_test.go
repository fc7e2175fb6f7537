package fakediscord

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestEphemeralResponseUpdatedByItsButton: a click on a button of an
// ephemeral response (which only its user sees and can click) may update
// that response (type 7), as Discord allows; the channel gains no message.
func TestEphemeralResponseUpdatedByItsButton(t *testing.T) {
	t.Parallel()
	w, s, got := interactionWorld(t)
	id, err := w.fake.RunCommand(w.text, w.alice, "ping")
	if err != nil {
		t.Fatal(err)
	}
	i := recv(t, got, "INTERACTION_CREATE")
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "sure?", Flags: discordgo.MessageFlagsEphemeral, Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.Button{Label: "yes", CustomID: "m:x:yes", Style: discordgo.DangerButton}}}}}}); err != nil {
		t.Fatal(err)
	}
	orig := w.fake.Interaction(id).Original
	before := len(w.fake.Messages(w.text))
	if _, err := w.fake.ClickButton(w.text, orig.ID, w.alice, "m:x:yes"); err != nil {
		t.Fatal(err)
	}
	click := recv(t, got, "component INTERACTION_CREATE")
	if err := s.InteractionRespond(click.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "done", Components: []discordgo.MessageComponent{}}}); err != nil {
		t.Fatalf("update the ephemeral response: %v", err)
	}
	if m := w.fake.Interaction(id).Original; m == nil || m.Content != "done" || len(m.Components) != 0 {
		t.Fatalf("the ephemeral response after the click = %+v", m)
	}
	if n := len(w.fake.Messages(w.text)); n != before {
		t.Fatalf("channel messages %d → %d: the ephemeral update leaked into the channel", before, n)
	}
}
