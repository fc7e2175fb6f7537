package fakediscord

import (
	"errors"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestAutocomplete: the user action dispatches a type-4 interaction with the focused option
// (inside its subcommand) and returns the client's type-8 choices; Discord's checks refuse more
// than 25 choices and a name over 100 characters; a non-autocomplete option is refused.
func TestAutocomplete(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.fake.Session()
	s.MaxRestRetries = 0
	_, err := s.ApplicationCommandBulkOverwrite(w.fake.AppID(), w.guild, []*discordgo.ApplicationCommand{
		{Name: "tag", Description: "tags", Options: []*discordgo.ApplicationCommandOption{{Name: "show", Description: "show one",
			Type: discordgo.ApplicationCommandOptionSubCommand, Options: []*discordgo.ApplicationCommandOption{
				{Name: "name", Description: "the tag", Type: discordgo.ApplicationCommandOptionString, Required: true, Autocomplete: true},
				{Name: "plain", Description: "plain", Type: discordgo.ApplicationCommandOptionString}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan []*discordgo.ApplicationCommandOptionChoice, 4)
	errs := make(chan error, 4)
	s.AddHandler(func(s *discordgo.Session, i *discordgo.InteractionCreate) {
		if i.Type != discordgo.InteractionApplicationCommandAutocomplete {
			return
		}
		d := i.ApplicationCommandData()
		if d.Name != "tag" || len(d.Options) != 1 || d.Options[0].Name != "show" || len(d.Options[0].Options) != 1 ||
			!d.Options[0].Options[0].Focused || d.Options[0].Options[0].StringValue() != "he" {
			errs <- errors.New("unexpected autocomplete data")
		}
		errs <- s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionApplicationCommandAutocompleteResult,
			Data: &discordgo.InteractionResponseData{Choices: <-answer}})
	})
	open(t, s)

	many := make([]*discordgo.ApplicationCommandOptionChoice, 26)
	for i := range many {
		many[i] = &discordgo.ApplicationCommandOptionChoice{Name: "c", Value: "v"}
	}
	for _, c := range []struct {
		name    string
		choices []*discordgo.ApplicationCommandOptionChoice
		ok      bool
	}{
		{"two", []*discordgo.ApplicationCommandOptionChoice{{Name: "hello", Value: "hello"}, {Name: "help", Value: "help"}}, true},
		{"26 choices", many, false},
		{"long name", []*discordgo.ApplicationCommandOptionChoice{{Name: strings.Repeat("x", 101), Value: "x"}}, false},
		{"empty name", []*discordgo.ApplicationCommandOptionChoice{{Name: "", Value: "x"}}, false},
	} {
		answer <- c.choices
		got, err := w.fake.Autocomplete(w.text, w.alice, "tag show", "name", "he")
		if herr := <-errs; herr != nil && c.ok {
			t.Fatalf("%s: client: %v", c.name, herr)
		}
		if c.ok {
			if err != nil || len(got) != 2 || got[0].Name != "hello" || got[1].Value != "help" {
				t.Fatalf("%s: Autocomplete = %+v, %v", c.name, got, err)
			}
			continue
		}
		if !errors.Is(err, ErrNoChoices) {
			t.Fatalf("%s: Autocomplete = %+v, %v; want ErrNoChoices", c.name, got, err)
		}
	}
	if _, err := w.fake.Autocomplete(w.text, w.alice, "tag show", "plain", "x"); !errors.Is(err, ErrNotAutocomplete) {
		t.Fatalf("non-autocomplete option: %v", err)
	}
	if _, err := w.fake.Autocomplete(w.text, w.alice, "nope", "name", "x"); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("unknown command: %v", err)
	}
}
