package proposals

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
)

// The review card (reference §4.1 "Card").
const (
	TitlePending  = "Configuration proposal"
	TitleApplied  = "Configuration proposal applied"
	TitleRejected = "Configuration proposal rejected"
	// TitleRolledBack is an applied proposal an admin rolled back.
	TitleRolledBack = "Configuration proposal rolled back"

	ColorPending  = 0xFEE75C
	ColorApplied  = 0x57F287
	ColorRejected = 0xED4245
	// ColorRolledBack is Discord's grey.
	ColorRolledBack = 0x99AAB5

	// previewLines is how many lines of the proposed document the card
	// shows.
	previewLines = 15
	// Discord's embed limits the card keeps to.
	embedTotal       = 6000
	embedFieldValue  = 1024
	embedDescription = 4096
)

// renderCard is the card's embed and, while pending, its Approve and
// Reject buttons (m:proposals:approve:<id>, m:proposals:reject:<id>).
func renderCard(p Proposal) (*sdk.OutgoingEmbed, []sdk.Component) {
	e := &sdk.OutgoingEmbed{Title: TitlePending, Color: ColorPending, Timestamp: true, Footer: "Proposal " + p.ID}
	switch p.State {
	case sdk.ProposalApplied:
		e.Title, e.Color = TitleApplied, ColorApplied
	case sdk.ProposalRejected:
		e.Title, e.Color = TitleRejected, ColorRejected
	case sdk.ProposalRolledBack:
		e.Title, e.Color = TitleRolledBack, ColorRolledBack
	}
	e.Description = clipRunes(p.Summary, sdk.MaxProposalSummaryLength)
	e.Fields = []sdk.EmbedField{
		{Name: "Target", Value: clipRunes(p.Target.String(), embedFieldValue), Inline: true},
		{Name: "Proposed by", Value: userActor(p.Actor.UserID), Inline: true},
	}
	if p.State != sdk.ProposalPending {
		e.Fields = append(e.Fields, sdk.EmbedField{Name: "Decision", Value: clipRunes(decisionText(p), embedFieldValue)})
	}
	// The preview takes what the embed total leaves.
	used := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description) + utf8.RuneCountInString(e.Footer)
	for _, f := range e.Fields {
		used += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
	}
	room := min(embedFieldValue, embedTotal-used-len("Preview"))
	e.Fields = append(e.Fields[:2], append([]sdk.EmbedField{{Name: "Preview", Value: preview(p.Content, room)}}, e.Fields[2:]...)...)
	if p.State != sdk.ProposalPending {
		return e, nil
	}
	return e, []sdk.Component{
		sdk.ButtonSpec{Key: "approve", Label: "Approve", Style: sdk.ButtonSuccess, Parts: []string{p.ID}},
		sdk.ButtonSpec{Key: "reject", Label: "Reject", Style: sdk.ButtonDanger, Parts: []string{p.ID}},
	}
}

// decisionText is "<@id> - reason" (the admin's name for a web decision).
func decisionText(p Proposal) string {
	who := userActor(p.DecidedByUser)
	if p.DecisionSource == "web" {
		who = p.DecidedByAdmin
	}
	if p.DecisionReason == "" {
		return who
	}
	return who + " - " + p.DecisionReason
}

// preview is the first previewLines lines in a yaml code block, ```
// escaped so the content cannot close the block, within room characters.
func preview(content string, room int) string {
	lines := strings.SplitN(content, "\n", previewLines+1)
	if len(lines) > previewLines {
		lines = lines[:previewLines]
	}
	body := strings.Join(lines, "\n")
	// Once is not enough: "````" would become "`\u200b```", a fence again.
	for strings.Contains(body, "```") {
		body = strings.ReplaceAll(body, "```", "`\u200b``")
	}
	const open, end = "```yaml\n", "\n```"
	max := room - utf8.RuneCountInString(open) - utf8.RuneCountInString(end)
	if max < 1 {
		max = 1
	}
	if utf8.RuneCountInString(body) > max {
		body = clipRunes(body, max-1) + "…"
	}
	return open + body + end
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

// refreshCard edits the card to the proposal's state (buttons removed once
// decided). A failure is logged: the decision stands.
func (s *Service) refreshCard(ctx context.Context, p Proposal) {
	if s.discord == nil || p.Card.MessageID == 0 {
		return
	}
	embed, buttons := renderCard(p)
	if err := s.discord.EditCard(context.WithoutCancel(ctx), p.Card, embed, buttons); err != nil {
		s.log.Warn("could not update the review card", "proposal", p.ID, "err", err)
	}
}
