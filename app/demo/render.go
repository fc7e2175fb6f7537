package demo

import (
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// demoEmbed is an embed as the chat view shows it.
func demoEmbed(e *discordgo.MessageEmbed) templates.DemoEmbed {
	out := templates.DemoEmbed{Title: e.Title, URL: e.URL, Description: e.Description, Color: demoColor(e.Color)}
	if e.Author != nil {
		out.Author = e.Author.Name
	}
	if e.Footer != nil {
		out.Footer = e.Footer.Text
	}
	if e.Image != nil {
		out.Image = e.Image.URL
	}
	if e.Thumbnail != nil {
		out.Thumbnail = e.Thumbnail.URL
	}
	for _, f := range e.Fields {
		if f != nil {
			out.Fields = append(out.Fields, templates.DemoField{Name: f.Name, Value: f.Value, Inline: f.Inline})
		}
	}
	return out
}

// demoColor is an embed or container colour as "#rrggbb", "" for none.
func demoColor(c int) string {
	if c <= 0 || c > 0xffffff {
		return ""
	}
	return fmt.Sprintf("#%06x", c)
}

var buttonStyles = map[discordgo.ButtonStyle]string{
	discordgo.PrimaryButton: "primary", discordgo.SecondaryButton: "secondary", discordgo.SuccessButton: "success",
	discordgo.DangerButton: "danger", discordgo.LinkButton: "link", discordgo.PremiumButton: "premium",
}

// demoComponents converts a message's components (classic rows and Components V2) for the
// chat view; a user, role, channel or mentionable menu offers the demo guild's.
func demoComponents(cs []discordgo.MessageComponent, g templates.DemoGuild) []templates.DemoComponent {
	out := make([]templates.DemoComponent, 0, len(cs))
	for _, c := range cs {
		if c == nil {
			continue
		}
		out = append(out, demoComponent(c, g))
	}
	return out
}

func demoComponent(c discordgo.MessageComponent, g templates.DemoGuild) templates.DemoComponent {
	switch v := c.(type) {
	case *discordgo.ActionsRow:
		return templates.DemoComponent{Kind: templates.DemoRow, Children: demoComponents(v.Components, g)}
	case *discordgo.Button:
		b := templates.DemoComponent{Kind: templates.DemoButton, Label: v.Label, Style: buttonStyles[v.Style], CustomID: v.CustomID, Disabled: v.Disabled}
		if v.Emoji != nil && v.Emoji.Name != "" && v.Emoji.ID == "" {
			b.Label = v.Emoji.Name + " " + b.Label
		}
		if v.Style == discordgo.LinkButton || (v.URL != "" && v.CustomID == "") {
			b.Kind, b.URL = templates.DemoLinkBtn, v.URL
		}
		if v.Style == discordgo.PremiumButton {
			b.Kind, b.Disabled = templates.DemoButton, true
		}
		return b
	case *discordgo.SelectMenu:
		s := templates.DemoComponent{Kind: templates.DemoSelect, CustomID: v.CustomID, Placeholder: v.Placeholder,
			Disabled: v.Disabled, MinValues: 1, MaxValues: v.MaxValues}
		if v.MinValues != nil {
			s.MinValues = *v.MinValues
		}
		if s.MaxValues < 1 {
			s.MaxValues = 1
		}
		defaults := map[string]bool{}
		for _, d := range v.DefaultValues {
			defaults[d.ID] = true
		}
		add := func(refs []templates.DemoLink, prefix string) {
			for _, r := range refs {
				s.Options = append(s.Options, templates.DemoSelectOption{Value: r.ID, Label: prefix + r.Name, Default: defaults[r.ID]})
			}
		}
		switch v.Type() {
		case discordgo.UserSelectMenuComponent:
			add(g.Members, "")
		case discordgo.RoleSelectMenuComponent:
			add(g.Roles, "@")
		case discordgo.MentionableSelectMenuComponent:
			add(g.Members, "")
			add(g.Roles, "@")
		case discordgo.ChannelSelectMenuComponent:
			add(g.Channels, "#")
		default:
			for _, o := range v.Options {
				s.Options = append(s.Options, templates.DemoSelectOption{Value: o.Value, Label: o.Label, Description: o.Description, Default: o.Default})
			}
		}
		return s
	case *discordgo.TextDisplay:
		return templates.DemoComponent{Kind: templates.DemoText, Content: v.Content}
	case *discordgo.Separator:
		return templates.DemoComponent{Kind: templates.DemoSeparator, Divider: v.Divider == nil || *v.Divider,
			Large: v.Spacing != nil && *v.Spacing == discordgo.SeparatorSpacingSizeLarge}
	case *discordgo.MediaGallery:
		gal := templates.DemoComponent{Kind: templates.DemoGallery}
		for _, it := range v.Items {
			gal.Media = append(gal.Media, templates.DemoMedia{URL: it.Media.URL, Description: deref(it.Description)})
		}
		return gal
	case *discordgo.Thumbnail:
		return templates.DemoComponent{Kind: templates.DemoThumbnail, Media: []templates.DemoMedia{{URL: v.Media.URL, Description: deref(v.Description)}}}
	case *discordgo.FileComponent:
		return templates.DemoComponent{Kind: templates.DemoFile, Media: []templates.DemoMedia{{URL: v.File.URL}}}
	case *discordgo.Section:
		sec := templates.DemoComponent{Kind: templates.DemoSection, Children: demoComponents(v.Components, g)}
		if v.Accessory != nil {
			a := demoComponent(v.Accessory, g)
			sec.Accessory = &a
		}
		return sec
	case *discordgo.Container:
		accent := ""
		if v.AccentColor != nil {
			accent = demoColor(*v.AccentColor)
		}
		return templates.DemoComponent{Kind: templates.DemoContainer, Accent: accent, Children: demoComponents(v.Components, g)}
	}
	return templates.DemoComponent{Kind: templates.DemoUnknown, Label: fmt.Sprintf("component of type %d", c.Type())}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// demoModal is a modal response as its form shows it: the text inputs of its rows.
func demoModal(id string, data *discordgo.InteractionResponseData) templates.DemoModal {
	m := templates.DemoModal{InteractionID: id, Title: data.Title}
	for _, row := range data.Components {
		ar, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, c := range ar.Components {
			ti, ok := c.(*discordgo.TextInput)
			if !ok {
				continue
			}
			m.Inputs = append(m.Inputs, form.DemoTextInput{CustomID: ti.CustomID, Label: ti.Label, Placeholder: ti.Placeholder,
				Value: ti.Value, Paragraph: ti.Style == discordgo.TextInputParagraph, Required: ti.Required,
				MinLength: ti.MinLength, MaxLength: ti.MaxLength})
		}
	}
	return m
}

// demoLeaves flattens a command into the invocations a form can run: itself, or each
// subcommand (in groups too) with its own options.
func demoLeaves(path, desc string, opts []*discordgo.ApplicationCommandOption, g templates.DemoGuild, global bool) []templates.DemoCommand {
	var out []templates.DemoCommand
	leaf := templates.DemoCommand{Path: path, Description: desc, Global: global}
	for _, o := range opts {
		switch o.Type {
		case discordgo.ApplicationCommandOptionSubCommand, discordgo.ApplicationCommandOptionSubCommandGroup:
			out = append(out, demoLeaves(path+" "+o.Name, o.Description, o.Options, g, global)...)
			continue
		}
		spec := form.DemoOptionSpec{Name: o.Name, Description: o.Description, Type: int(o.Type), Required: o.Required,
			MinValue: o.MinValue, MinLength: derefInt(o.MinLength), MaxLength: o.MaxLength}
		if o.MaxValue != 0 {
			spec.MaxValue = &o.MaxValue
		}
		for _, c := range o.Choices {
			spec.Choices = append(spec.Choices, form.DemoChoice{Name: c.Name, Value: fmt.Sprint(c.Value)})
		}
		switch o.Type {
		case discordgo.ApplicationCommandOptionUser:
			spec.Choices = refChoices(g.Members)
		case discordgo.ApplicationCommandOptionChannel:
			spec.Choices = refChoices(g.Channels, "#")
		case discordgo.ApplicationCommandOptionRole:
			spec.Choices = refChoices(g.Roles, "@")
		case discordgo.ApplicationCommandOptionMentionable:
			spec.Choices = append(refChoices(g.Members), refChoices(g.Roles, "@")...)
		case discordgo.ApplicationCommandOptionAttachment:
			if o.Required {
				leaf.Unsendable = o.Name
			}
		}
		leaf.Options = append(leaf.Options, spec)
	}
	if len(out) > 0 {
		return out
	}
	return []templates.DemoCommand{leaf}
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func refChoices(refs []templates.DemoLink, prefix ...string) []form.DemoChoice {
	p := strings.Join(prefix, "")
	out := make([]form.DemoChoice, 0, len(refs))
	for _, r := range refs {
		out = append(out, form.DemoChoice{Name: p + r.Name, Value: r.ID})
	}
	return out
}
