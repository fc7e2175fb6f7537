package admin

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

const auditPageSize = 50

// audit lists the audit log, newest first, filtered by actor, action and free
// text, paginated by an id cursor (?before=).
func (s *Server) audit(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	f := store.AuditFilter{
		Actor:  clip(strings.TrimSpace(c.QueryParam("actor")), 128),
		Action: clip(strings.TrimSpace(c.QueryParam("action")), 128),
		Query:  clip(strings.TrimSpace(c.QueryParam("q")), 200),
		Limit:  auditPageSize,
	}
	if b := c.QueryParam("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return echo.NewHTTPError(http.StatusBadRequest, "The page cursor is not valid.")
		}
		f.Before = n
	}
	entries, next, err := s.opts.Store.ListAudit(ctx, f)
	if err != nil {
		return fmt.Errorf("admin: audit: %w", err)
	}
	actions, err := s.opts.Store.AuditActions(ctx)
	if err != nil {
		return fmt.Errorf("admin: audit actions: %w", err)
	}
	if f.Action != "" && !slices.Contains(actions, f.Action) {
		actions = append(actions, f.Action)
	}
	v := templates.AuditView{
		Actor: f.Actor, Action: f.Action, Query: f.Query,
		Filtered: f.Actor != "" || f.Action != "" || f.Query != "",
	}
	for _, a := range actions {
		v.Actions = append(v.Actions, auditAction(a))
	}
	now, names := time.Now(), s.auditNamer()
	for _, e := range entries {
		r := auditRow(e, now)
		names.name(&r, e)
		r.Mentions = s.auditMentions(e)
		v.Rows = append(v.Rows, r)
	}
	q := url.Values{}
	for k, val := range map[string]string{"actor": f.Actor, "action": f.Action, "q": f.Query} {
		if val != "" {
			q.Set(k, val)
		}
	}
	if next > 0 {
		nq := maps.Clone(q)
		nq.Set("before", strconv.FormatInt(next, 10))
		v.NextURL = "/audit?" + nq.Encode()
	}
	if f.Before > 0 {
		v.FirstURL = "/audit"
		if len(q) > 0 {
			v.FirstURL += "?" + q.Encode()
		}
	}
	return render(c, http.StatusOK, templates.AuditPage(s.chrome(c, "Audit log", "audit"), v))
}

// auditActionLabel names every action the code base writes to the audit log
// (TestAuditActionsHaveLabels finds them in the source and fails on one
// missing here). The page shows the label; the id stays the filter's value
// and the label's tooltip.
func auditActionLabel(id string) (string, bool) {
	switch id {
	case auth.ActionSetup:
		return "Completed set-up", true
	case auth.ActionAdminCreate:
		return "Created an admin", true
	case auth.ActionLogin:
		return "Signed in", true
	case auth.ActionLoginFailed:
		return "Failed sign-in", true
	case auth.ActionLogout:
		return "Signed out", true
	case auth.ActionPasswordChange:
		return "Changed password", true
	case auth.ActionPasswordChangeFailed:
		return "Failed password change", true
	case auth.ActionPasswordReset:
		return "Reset a password", true
	case auth.ActionSessionsRevoke:
		return "Signed out other sessions", true
	case ActionBackupDownload:
		return "Downloaded a backup", true
	case ActionDemoMessagePost:
		return "Posted in the demo guild", true
	case ActionDemoButtonClick:
		return "Clicked a button in the demo guild", true
	case ActionDemoCommandRun:
		return "Ran a slash command in the demo guild", true
	case ActionDemoModalSubmit:
		return "Submitted a modal in the demo guild", true
	case store.ActionRestore:
		return "Restored a backup", true
	case guildcfg.ActionDocumentSave:
		return "Saved a guild configuration document", true
	case guildcfg.ActionDocumentRevert:
		return "Reverted a guild configuration document", true
	case guildcfg.ActionDocumentDelete:
		return "Removed a guild configuration document", true
	case proposals.ActionApprove:
		return "Approved a configuration proposal", true
	case proposals.ActionApproveFailed:
		return "Approved a configuration proposal (not applied)", true
	case proposals.ActionReject:
		return "Rejected a configuration proposal", true
	case proposals.ActionRollback:
		return "Rolled back an applied configuration proposal", true
	case settings.AuditActionChecklistDismiss:
		return "Dismissed the first-run checklist", true
	case settings.AuditActionProposalNotifications:
		return "Changed the proposal notifications", true
	case store.ActionBackupWithoutSecrets:
		return "Removed the secrets from a backup copy", true
	case store.ActionBackupWithoutTranscripts:
		return "Removed the assistant's transcripts from a backup copy", true
	case settings.AuditActionWorldtree:
		return "Changed Worldtree settings", true
	case settings.AuditActionDiscordToken:
		return "Changed the Discord bot token", true
	case settings.AuditActionDiscordIntents:
		return "Changed the Discord intents", true
	case settings.AuditActionDiscordCache:
		return "Changed the Discord cache sizes", true
	case settings.AuditActionDiscordReconnect:
		return "Reconnected to Discord", true
	case settings.AuditActionAssistant:
		return "Changed the model provider", true
	case settings.AuditActionAssistantBehaviour:
		return "Changed the assistant's behaviour", true
	case settings.AuditActionAssistantLimits:
		return "Changed the assistant's limits and budgets", true
	case settings.AuditActionAssistantRetention:
		return "Changed the assistant's transcript retention", true
	case ActionAssistantTest:
		return "Tested the model provider's connection", true
	case settings.AuditActionAssistantTranscripts:
		return "Turned Show transcripts on or off", true
	case assistant.AuditActionConversationDelete:
		return "Deleted an assistant conversation", true
	case assistant.ActionForget:
		return "Deleted their assistant data (/forget)", true
	case host.ActionModuleEnable:
		return "Enabled a module", true
	case host.ActionModuleDisable:
		return "Disabled a module", true
	case host.ActionModuleRestart:
		return "Restarted modules", true
	case host.ActionSettingsSave:
		return "Changed module settings", true
	case scheduler.ActionJobRunNow:
		return "Ran a scheduled job now", true
	case scheduler.ActionJobCancel:
		return "Cancelled a scheduled job", true
	case results.ActionRetryNow:
		return "Retried scheduled results now", true
	case results.ActionPause:
		return "Paused scheduled-result delivery", true
	case results.ActionResume:
		return "Resumed scheduled-result delivery", true
	case results.ActionUnsubscribe:
		return "Unsubscribed from scheduled results", true
	case results.ActionPurgeExpired:
		return "Purged expired scheduled results", true
	case tasks.ActionCreate:
		return "Created a scheduled task", true
	case tasks.ActionUpdate:
		return "Edited a scheduled task", true
	case tasks.ActionPause:
		return "Paused a scheduled task", true
	case tasks.ActionResume:
		return "Resumed a scheduled task", true
	case tasks.ActionDelete:
		return "Deleted a scheduled task", true
	case tasks.ActionRunNow:
		return "Ran a scheduled task now", true
	case tasks.ActionPreview:
		return "Previewed a scheduled task", true
	case tasks.ActionRetryPost:
		return "Re-sent an uncertain post of a scheduled task", true
	}
	return "", false
}

// auditAction pairs an action id with its label; an action without one (a
// newer binary's, or a module's) shows its id.
func auditAction(id string) templates.AuditAction {
	label, ok := auditActionLabel(id)
	if !ok {
		label = id
	}
	return templates.AuditAction{ID: id, Label: label}
}

// userAgentDetail is the prefix app/auth gives a sign-in's user agent.
const userAgentDetail = "user agent: "

// auditRow renders e for the page rendered at now.
func auditRow(e store.AuditEntry, now time.Time) templates.AuditRow {
	r := templates.AuditRow{
		ID: e.ID, At: e.At.UTC().Format(time.RFC3339), AtExact: exactTime(e.At), AtRelative: relativeTime(e.At, now),
		Actor: e.Actor, Action: auditAction(e.Action), Target: e.Target, Detail: e.Detail, IP: e.IP,
	}
	if e.Action == auth.ActionLoginFailed {
		// The actor column holds the username someone typed, not who they are.
		r.Actor, r.Attempted = "", e.Actor
		if e.Actor == auth.EmptyUsernameActor {
			r.Actor, r.Attempted = "Someone (no username)", ""
		}
	}
	if ua, ok := strings.CutPrefix(e.Detail, userAgentDetail); ok {
		r.Detail, r.DetailTitle = summarizeUserAgent(ua), ua
	}
	return r
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}
