package fakediscord

import (
	"errors"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// interactionWorld: a world with /ping and /note commands and a session receiving
// interactions.
func interactionWorld(t *testing.T) (*world, *discordgo.Session, <-chan *discordgo.InteractionCreate) {
	t.Helper()
	w := newWorld(t, Options{})
	s := w.fake.Session()
	s.MaxRestRetries = 0
	_, err := s.ApplicationCommandBulkOverwrite(w.fake.AppID(), w.guild, []*discordgo.ApplicationCommand{
		{Name: "ping", Description: "pong"},
		{Name: "note", Description: "take a note", Options: []*discordgo.ApplicationCommandOption{
			{Name: "text", Description: "the note", Type: discordgo.ApplicationCommandOptionString, Required: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *discordgo.InteractionCreate, 16)
	s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { got <- i })
	open(t, s)
	return w, s, got
}

// TestInteractionCommandButtonModalFlow: a slash command with options answered with a
// message and a button; the click updates the message; a modal is submitted with its values;
// a deferred answer is edited and followed up; a second callback is refused with 40060.
func TestInteractionCommandButtonModalFlow(t *testing.T) {
	t.Parallel()
	w, s, got := interactionWorld(t)

	id, err := w.fake.RunCommand(w.text, w.alice, "note", &discordgo.ApplicationCommandInteractionDataOption{Name: "text", Value: "buy milk"})
	if err != nil {
		t.Fatal(err)
	}
	i := recv(t, got, "INTERACTION_CREATE")
	data := i.ApplicationCommandData()
	if i.ID != id || data.Name != "note" || data.Options[0].StringValue() != "buy milk" || i.Member.User.ID != w.alice {
		t.Fatalf("interaction = %+v / %+v", i.Interaction, data)
	}
	err = s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "noted", Components: []discordgo.MessageComponent{discordgo.ActionsRow{
			Components: []discordgo.MessageComponent{discordgo.Button{Label: "done", CustomID: "notes:done:1", Style: discordgo.SuccessButton}}}}}})
	if err != nil {
		t.Fatalf("respond: %v", err)
	}
	st := w.fake.Interaction(id)
	if st.Response == nil || st.Response.Data == nil || len(st.Response.Data.Components) != 1 || st.Original == nil || st.Original.Content != "noted" || len(st.Original.Components) != 1 {
		t.Fatalf("state = %+v", st)
	}
	err = s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "twice"}})
	wantAPIError(t, err, 400, CodeAlreadyAcknowledged)

	// the button
	if _, err := w.fake.ClickButton(w.text, st.Original.ID, w.bob, "notes:nope"); !errors.Is(err, ErrUnknownComponent) {
		t.Fatalf("unknown custom id: %v", err)
	}
	clickID, err := w.fake.ClickButton(w.text, st.Original.ID, w.bob, "notes:done:1")
	if err != nil {
		t.Fatal(err)
	}
	click := recv(t, got, "component INTERACTION_CREATE")
	if click.MessageComponentData().CustomID != "notes:done:1" || click.Message == nil || click.Message.ID != st.Original.ID ||
		len(click.Message.Components) != 1 {
		t.Fatalf("click = %+v", click.Interaction)
	}
	err = s.InteractionRespond(click.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "done ✓", Components: []discordgo.MessageComponent{}}})
	if err != nil {
		t.Fatal(err)
	}
	if m := w.fake.Interaction(clickID).Original; m == nil || m.Content != "done ✓" || len(m.Components) != 0 {
		t.Fatalf("updated message = %+v", m)
	}

	// a modal
	if _, err := w.fake.RunCommand(w.text, w.alice, "ping"); err != nil {
		t.Fatal(err)
	}
	ping := recv(t, got, "ping")
	err = s.InteractionRespond(ping.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{CustomID: "notes:modal", Title: "A note", Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{CustomID: "body", Label: "Body", Style: discordgo.TextInputShort}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.fake.SubmitModal(id, nil); !errors.Is(err, ErrNoModal) {
		t.Fatalf("submit without a modal: %v", err)
	}
	if _, err := w.fake.SubmitModal(ping.ID, map[string]string{"body": "the text"}); err != nil {
		t.Fatal(err)
	}
	sub := recv(t, got, "modal submit")
	md := sub.ModalSubmitData()
	if md.CustomID != "notes:modal" || md.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.TextInput).Value != "the text" {
		t.Fatalf("modal submit = %+v", md)
	}
	// deferred, then edit original and a follow-up (ephemeral: not in the channel)
	if err := s.InteractionRespond(sub.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InteractionResponseEdit(sub.Interaction, &discordgo.WebhookEdit{Content: ptr("saved")}); err != nil {
		t.Fatalf("edit original: %v", err)
	}
	fu, err := s.FollowupMessageCreate(sub.Interaction, true, &discordgo.WebhookParams{Content: "only you", Flags: discordgo.MessageFlagsEphemeral})
	if err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	final := w.fake.Interaction(sub.ID)
	if final.Original.Content != "saved" || final.Original.Flags&discordgo.MessageFlagsLoading != 0 || len(final.Followups) != 1 || final.Followups[0].ID != fu.ID {
		t.Fatalf("final = %+v", final)
	}
	for _, m := range w.fake.Messages(w.text) {
		if m.ID == fu.ID {
			t.Fatal("an ephemeral follow-up was stored in the channel")
		}
	}
	if err := s.FollowupMessageDelete(sub.Interaction, fu.ID); err != nil {
		t.Fatalf("delete follow-up: %v", err)
	}
	if err := s.InteractionResponseDelete(sub.Interaction); err != nil {
		t.Fatalf("delete original: %v", err)
	}
	_, err = s.InteractionResponse(sub.Interaction)
	wantAPIError(t, err, 404, CodeUnknownMessage)
}

// TestInteractionValidation: response types refused per interaction type; Discord's limits
// on a response; follow-ups before the first response; commands and options the fake checks.
func TestInteractionValidation(t *testing.T) {
	t.Parallel()
	w, s, got := interactionWorld(t)
	if _, err := w.fake.RunCommand(w.text, w.alice, "nope"); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("unknown command: %v", err)
	}
	if _, err := w.fake.RunCommand(w.text, w.alice, "note"); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("missing required option: %v", err)
	}
	if _, err := w.fake.RunCommand(w.text, w.alice, "ping"); err != nil {
		t.Fatal(err)
	}
	i := recv(t, got, "ping")
	_, err := s.FollowupMessageCreate(i.Interaction, true, &discordgo.WebhookParams{Content: "too early"})
	wantAPIError(t, err, 404, CodeUnknownWebhook)
	err = s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "x"}})
	wantAPIError(t, err, 400, CodeInvalidFormBody)
	long := make([]byte, 2001)
	for k := range long {
		long[k] = 'x'
	}
	err = s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: string(long)}})
	wantAPIError(t, err, 400, CodeInvalidFormBody)
	if st := w.fake.Interaction(i.ID); st.Response != nil || st.Callbacks != 2 {
		t.Fatalf("a refused callback counted as the response: %+v", st)
	}
	// a refused answer leaves the interaction open: the valid one is still accepted
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "pong", Flags: discordgo.MessageFlagsEphemeral}}); err != nil {
		t.Fatal(err)
	}
	if st := w.fake.Interaction(i.ID); st.Original == nil || st.Original.Content != "pong" {
		t.Fatalf("ephemeral original = %+v", st.Original)
	}
}

// TestInteractionTiming: with Discord's 3 s deadline a late first callback is 10062 Unknown
// interaction; a deferred answer in time keeps the token for follow-ups for 15 minutes, then
// 50027.
func TestInteractionTiming(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w := newWorld(t, Options{Now: c.now, InteractionDeadline: DiscordInteractionDeadline})
	s := w.rest()
	if _, err := s.ApplicationCommandBulkOverwrite(w.fake.AppID(), w.guild, []*discordgo.ApplicationCommand{{Name: "ping", Description: "p"}}); err != nil {
		t.Fatal(err)
	}
	interaction := func() *discordgo.Interaction {
		id, err := w.fake.RunCommand(w.text, w.alice, "ping")
		if err != nil {
			t.Fatal(err)
		}
		st := w.fake.Interaction(id)
		return &discordgo.Interaction{ID: st.ID, Token: st.Token, AppID: w.fake.AppID()}
	}
	late := interaction()
	c.add(DiscordInteractionDeadline + time.Millisecond)
	err := s.InteractionRespond(late, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "too late"}})
	wantAPIError(t, err, 404, CodeUnknownInteraction)

	deferred := interaction()
	c.add(DiscordInteractionDeadline)
	if err := s.InteractionRespond(deferred, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatalf("deferred in time: %v", err)
	}
	c.add(14 * time.Minute)
	if _, err := s.FollowupMessageCreate(deferred, true, &discordgo.WebhookParams{Content: "still in time"}); err != nil {
		t.Fatalf("follow-up within 15 minutes: %v", err)
	}
	c.add(time.Minute)
	_, err = s.FollowupMessageCreate(deferred, true, &discordgo.WebhookParams{Content: "expired"})
	wantAPIError(t, err, 401, 50027)
}
