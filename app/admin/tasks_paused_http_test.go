package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// pausedTask seeds a task and pauses it: its next occurrence is kept (for
// the resume), but no run is due.
func pausedTask(t *testing.T, h *harness) {
	t.Helper()
	seedTask(taskDef("Standup", "Standup time"))(t, h)
	if _, err := h.tasks.admin.SetPaused(context.Background(), "seed", h.vars["task"], true); err != nil {
		t.Fatal(err)
	}
}

var taskPausedScenarios = []scenario{
	{name: "a paused task's page says paused and shows no next run", method: http.MethodGet, url: "/tasks/{task}",
		signedIn: true, setup: pausedTask, wantStatus: http.StatusOK,
		wantContains:    []string{">paused<", `data-testid="task-next-paused"`, `data-testid="task-resume"`},
		wantNotContains: []string{`data-testid="task-next-due"`, "Next run"}},
	{name: "the list shows a paused task's next run as paused", method: http.MethodGet, url: "/tasks",
		signedIn: true, setup: pausedTask, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="task-next-paused-{task}"`}},
	{name: "an active task's page shows its next run", method: http.MethodGet, url: "/tasks/{task}",
		signedIn: true, setup: seedTask(taskDef("Standup", "Standup time")), wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="task-next-due"`}, wantNotContains: []string{`data-testid="task-next-paused"`}},
}

// TestTaskPausedReadsPaused: a paused task never shows a next run.
func TestTaskPausedReadsPaused(t *testing.T) { runScenarios(t, taskPausedScenarios) }

// TestTaskOwnerNotAMember: a task's page says so when its owner is no
// member of its server the bot knows, and names no such note for a member.
func TestTaskOwnerNotAMember(t *testing.T) {
	h := newHarness(t)
	h.fake.AddGuild(fakediscord.GuildSpec{ID: strconv.Itoa(taskGuild), Name: "Task guild"})
	owner := h.fake.AddUser(discordgo.User{Username: "ada"})
	h.fake.AddMember(strconv.Itoa(taskGuild), owner.ID)
	ownerID, err := strconv.ParseUint(owner.ID, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	startBot(withToken(""))(t, h)
	discordWait(t, "the bot knows the member", func() bool {
		_, ok := h.bot.Member(taskGuild, ownerID)
		return ok
	})
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	for _, tt := range []struct {
		name  string
		owner uint64
		noted bool
	}{{"a member", ownerID, false}, {"no member", 123456789, true}} {
		t.Run(tt.name, func(t *testing.T) {
			def := taskDef("Standup "+tt.name, "Standup time")
			def.OwnerID = tt.owner
			seedTask(def)(t, h)
			page := c.get("/tasks/" + h.vars["task"])
			wantStatus(t, page, http.StatusOK)
			if got := strings.Contains(page.body, "not a member of this server"); got != tt.noted {
				t.Errorf("owner %d: the page notes no membership: %v, want %v", tt.owner, got, tt.noted)
			}
		})
	}
}
