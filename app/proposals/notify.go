package proposals

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// notifyTimeout bounds one notification.
const notifyTimeout = 30 * time.Second

// WebhookPayload is the JSON a webhook notification posts.
type WebhookPayload struct {
	Event      string `json:"event"` // "proposal.created"
	ID         string `json:"id"`
	GuildID    string `json:"guild_id"`
	Target     string `json:"target"`
	Module     string `json:"module"`
	Summary    string `json:"summary"`
	ProposedBy string `json:"proposed_by"`
	CreatedAt  string `json:"created_at"`
}

// notifyNew tells the owner of a new proposal, in the background, as the
// settings say (off by default). A failure is logged; it never blocks or
// undoes the proposal.
func (s *Service) notifyNew(p Proposal) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		ctx, cancel := context.WithTimeout(s.bgCtx, notifyTimeout)
		defer cancel()
		if err := s.sendNotification(ctx, p); err != nil {
			s.log.Warn("proposal notification failed", "proposal", p.ID, "err", err)
		}
	}()
}

func (s *Service) sendNotification(ctx context.Context, p Proposal) error {
	n, err := s.notify(ctx)
	if err != nil {
		return err
	}
	switch n.Mode {
	case settings.NotifyDM:
		owner := s.owner
		if s.discord != nil {
			if id := s.discord.OwnerID(); id != 0 {
				owner = id
			}
		}
		if owner == 0 || s.discord == nil {
			return fmt.Errorf("proposals: notify: no owner to DM (the application has no owner yet; set KIMI_OWNER_USER_ID)")
		}
		text := fmt.Sprintf("New configuration proposal `%s` from %s for `%s`: %s", p.ID, p.Module, p.Target.String(), clipRunes(p.Summary, 1500))
		ok, err := s.discord.SendCoreDM(ctx, owner, clipRunes(text, 2000))
		if err != nil {
			return fmt.Errorf("proposals: notify: DM: %w", err)
		}
		if !ok {
			return fmt.Errorf("proposals: notify: the DM to the owner %d could not be delivered", owner)
		}
	case settings.NotifyWebhook:
		if n.WebhookURL == "" {
			return fmt.Errorf("proposals: notify: no webhook URL is set")
		}
		payload := WebhookPayload{Event: "proposal.created", ID: p.ID, GuildID: strconv.FormatUint(p.GuildID, 10), Target: p.Target.String(),
			Module: p.Module, Summary: p.Summary, ProposedBy: strconv.FormatUint(p.Actor.UserID, 10), CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339)}
		if err := s.webhook(ctx, n.WebhookURL, payload); err != nil {
			return fmt.Errorf("proposals: notify: webhook (host %s): %w", n.WebhookHost(), err)
		}
	}
	return nil
}

// postWebhook posts payload under the egress rules modules' HTTP follows:
// an https host, public addresses only (checked on the address dialed),
// bounded time and response size.
func postWebhook(ctx context.Context, rawURL string, payload any) error {
	if msg := settings.WebhookURLProblem(rawURL); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	rule := sdk.HostRule{Host: u.Hostname(), Schemes: []string{"https"}, Network: sdk.NetworkPublic}
	if p := u.Port(); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("bad port %q", p)
		}
		rule.Ports = []int{port}
	}
	port, err := egress.New(egress.Options{Module: "proposals", Rules: []sdk.HostRule{rule}})
	if err != nil {
		return err
	}
	defer port.CloseIdleConnections()
	resp, err := port.PostJSON(ctx, rawURL, payload, sdk.WithMaxBytes(64<<10))
	if err != nil {
		return err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return fmt.Errorf("the webhook answered HTTP %d", resp.Status)
	}
	return nil
}
