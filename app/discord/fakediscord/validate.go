package fakediscord

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Discord's message and command limits.
const (
	MaxContent          = 2000
	MaxEmbeds           = 10
	MaxEmbedTotal       = 6000
	MaxCustomID         = 100
	MaxActionRows       = 5
	MaxRowComponents    = 5
	MaxV2Components     = 40
	MaxChatCommands     = 100
	MaxUserCommands     = 5
	MaxMessageCommands  = 5
	MaxCommandOptions   = 25
	MaxChoices          = 25
	MaxCommandName      = 32
	MaxCommandDesc      = 100
	MaxMessagesPerFetch = 100
)

// messageBody is a message create/edit payload as a client sends it. Components stay raw for
// validation; the stored message decodes them with discordgo's own decoder.
type messageBody struct {
	Content          *string                           `json:"content"`
	Embeds           []*discordgo.MessageEmbed         `json:"embeds"`
	Components       []rawComponent                    `json:"components"`
	Flags            discordgo.MessageFlags            `json:"flags"`
	AllowedMentions  *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	MessageReference *discordgo.MessageReference       `json:"message_reference"`
	Attachments      []*discordgo.MessageAttachment    `json:"attachments"`
	StickerIDs       []string                          `json:"sticker_ids"`
	TTS              bool                              `json:"tts"`
}

// rawComponent is any component, legacy or V2, as far as the limits need it.
type rawComponent struct {
	Type       discordgo.ComponentType `json:"type"`
	CustomID   string                  `json:"custom_id"`
	Label      string                  `json:"label"`
	Style      int                     `json:"style"`
	URL        string                  `json:"url"`
	Components []rawComponent          `json:"components"`
	Accessory  *rawComponent           `json:"accessory"`
	Options    []json.RawMessage       `json:"options"`
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// validateMessage applies Discord's limits to a payload; files are the multipart attachments.
// create says whether an empty message is refused (an edit may clear fields).
func validateMessage(b *messageBody, files int, create bool) *apiError {
	f := fieldErrors{}
	content := ""
	if b.Content != nil {
		content = *b.Content
	}
	v2 := b.Flags&discordgo.MessageFlagsIsComponentsV2 != 0
	if v2 && (content != "" || len(b.Embeds) > 0) {
		f.add("content", "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2", "The 'content' and 'embeds' fields cannot be used when using MessageFlags.IS_COMPONENTS_V2")
	}
	if n := runes(content); n > MaxContent {
		f.add("content", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxContent))
	}
	if len(b.Embeds) > MaxEmbeds {
		f.add("embeds", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxEmbeds))
	}
	total := 0
	for i, e := range b.Embeds {
		p := "embeds." + strconv.Itoa(i)
		if e == nil {
			f.add(p, "BASE_TYPE_REQUIRED", "This field is required")
			continue
		}
		check := func(field, s string, limit int) {
			total += runes(s)
			if runes(s) > limit {
				f.add(p+"."+field, "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", limit))
			}
		}
		check("title", e.Title, 256)
		check("description", e.Description, 4096)
		if e.Footer != nil {
			check("footer.text", e.Footer.Text, 2048)
		}
		if e.Author != nil {
			check("author.name", e.Author.Name, 256)
		}
		if len(e.Fields) > 25 {
			f.add(p+".fields", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
		}
		for j, fl := range e.Fields {
			fp := "fields." + strconv.Itoa(j)
			if fl == nil {
				f.add(p+"."+fp, "BASE_TYPE_REQUIRED", "This field is required")
				continue
			}
			check(fp+".name", fl.Name, 256)
			check(fp+".value", fl.Value, 1024)
		}
	}
	if total > MaxEmbedTotal {
		f.add("embeds", "MAX_EMBED_SIZE_EXCEEDED", fmt.Sprintf("Embed size exceeds maximum size of %d", MaxEmbedTotal))
	}
	validateComponents(f, b.Components, v2)
	if err := f.err(); err != nil {
		return err
	}
	if create && content == "" && len(b.Embeds) == 0 && len(b.Components) == 0 && files == 0 && len(b.StickerIDs) == 0 {
		return &apiError{status: 400, Code: CodeEmptyMessage, Message: "Cannot send an empty message"}
	}
	return nil
}

func validateComponents(f fieldErrors, top []rawComponent, v2 bool) {
	if !v2 {
		if len(top) > MaxActionRows {
			f.add("components", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxActionRows))
		}
		for i, row := range top {
			p := "components." + strconv.Itoa(i)
			if row.Type != discordgo.ActionsRowComponent {
				f.add(p+".type", "COMPONENT_TYPE_INVALID", "Component type is invalid without the IS_COMPONENTS_V2 flag")
				continue
			}
			if len(row.Components) > MaxRowComponents {
				f.add(p+".components", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxRowComponents))
			}
			for j := range row.Components {
				checkComponent(f, p+".components."+strconv.Itoa(j), &row.Components[j])
			}
		}
		return
	}
	count := 0
	var walk func(p string, cs []rawComponent)
	walk = func(p string, cs []rawComponent) {
		for i := range cs {
			count++
			cp := p + "." + strconv.Itoa(i)
			checkComponent(f, cp, &cs[i])
			walk(cp+".components", cs[i].Components)
			if cs[i].Accessory != nil {
				count++
				checkComponent(f, cp+".accessory", cs[i].Accessory)
			}
		}
	}
	walk("components", top)
	if count > MaxV2Components {
		f.add("components", "COMPONENT_MAX_TOTAL_COMPONENTS_EXCEEDED", fmt.Sprintf("The message can contain at most %d components", MaxV2Components))
	}
}

func checkComponent(f fieldErrors, p string, c *rawComponent) {
	if n := runes(c.CustomID); n > MaxCustomID {
		f.add(p+".custom_id", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", MaxCustomID))
	}
	if c.Type == discordgo.ButtonComponent {
		if runes(c.Label) > 80 {
			f.add(p+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
		}
		link := c.Style == int(discordgo.LinkButton)
		if link && c.URL == "" {
			f.add(p+".url", "BASE_TYPE_REQUIRED", "This field is required")
		}
		if !link && c.Style != 6 && c.CustomID == "" {
			f.add(p+".custom_id", "BASE_TYPE_REQUIRED", "This field is required")
		}
	}
	if c.Type == discordgo.SelectMenuComponent && len(c.Options) > 25 {
		f.add(p+".options", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
}

// chatNameRe is Discord's command-name pattern (lowercase for chat input commands).
var chatNameRe = regexp.MustCompile(`\A[-_\p{Ll}\p{Lo}\p{N}\p{Devanagari}\p{Thai}\p{M}]{1,32}\z`)

// validateCommands applies Discord's bulk-overwrite validation; the error paths are indexes
// into the list, as Discord's are.
func validateCommands(cmds []*discordgo.ApplicationCommand) *apiError {
	f := fieldErrors{}
	counts := map[discordgo.ApplicationCommandType]int{}
	seen := map[string]int{}
	for i, c := range cmds {
		p := strconv.Itoa(i)
		if c == nil {
			f.add(p, "BASE_TYPE_REQUIRED", "This field is required")
			continue
		}
		t := c.Type
		if t == 0 {
			t = discordgo.ChatApplicationCommand
		}
		counts[t]++
		key := strconv.Itoa(int(t)) + "/" + c.Name
		if _, dup := seen[key]; dup {
			f.add(p+".name", "APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique")
		}
		seen[key] = i
		if t == discordgo.ChatApplicationCommand {
			if !chatNameRe.MatchString(c.Name) {
				f.add(p+".name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
			}
			if n := runes(c.Description); n < 1 || n > MaxCommandDesc {
				f.add(p+".description", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", MaxCommandDesc))
			}
			validateOptions(f, p+".options", c.Options)
		} else {
			if n := runes(c.Name); n < 1 || n > MaxCommandName {
				f.add(p+".name", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", MaxCommandName))
			}
			if c.Description != "" {
				f.add(p+".description", "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION", "Context menu commands cannot have description")
			}
		}
	}
	if counts[discordgo.ChatApplicationCommand] > MaxChatCommands {
		f.add("_root", "APPLICATION_COMMANDS_TOO_MANY", fmt.Sprintf("Maximum number of application commands reached (%d)", MaxChatCommands))
	}
	if counts[discordgo.UserApplicationCommand] > MaxUserCommands || counts[discordgo.MessageApplicationCommand] > MaxMessageCommands {
		f.add("_root", "APPLICATION_COMMANDS_TOO_MANY", "Maximum number of context menu commands reached (5)")
	}
	if e, ok := f["_root"]; ok {
		delete(f, "_root")
		for k, v := range e.(map[string]any) {
			f[k] = v
		}
	}
	return f.err()
}

func validateOptions(f fieldErrors, p string, opts []*discordgo.ApplicationCommandOption) {
	if len(opts) > MaxCommandOptions {
		f.add(p, "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxCommandOptions))
	}
	optional := false
	names := map[string]bool{}
	for i, o := range opts {
		op := p + "." + strconv.Itoa(i)
		if o == nil {
			f.add(op, "BASE_TYPE_REQUIRED", "This field is required")
			continue
		}
		if !chatNameRe.MatchString(o.Name) {
			f.add(op+".name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
		}
		if names[o.Name] {
			f.add(op+".name", "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option names must be unique")
		}
		names[o.Name] = true
		if n := runes(o.Description); n < 1 || n > MaxCommandDesc {
			f.add(op+".description", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", MaxCommandDesc))
		}
		if o.Required && optional {
			f.add(op+".required", "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options")
		}
		if !o.Required {
			optional = true
		}
		if len(o.Choices) > MaxChoices {
			f.add(op+".choices", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxChoices))
		}
		if o.Type == discordgo.ApplicationCommandOptionSubCommand || o.Type == discordgo.ApplicationCommandOptionSubCommandGroup {
			validateOptions(f, op+".options", o.Options)
		}
	}
}

// decodeCommands decodes a bulk-overwrite body; false when it is not a command list.
func decodeCommands(b []byte) ([]*discordgo.ApplicationCommand, bool) {
	var cmds []*discordgo.ApplicationCommand
	if err := json.Unmarshal(b, &cmds); err != nil {
		return nil, false
	}
	return cmds, true
}
