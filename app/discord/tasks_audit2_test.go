package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// TestTaskSendToAGoneChannel: a task's channel that no longer exists
// (deleted after the task was saved: Discord answers 404 Unknown Channel)
// fails the send saying the channel no longer exists (it said "not in an
// active guild"), keeps Discord's 404 (the row fails with it) and is never uncertain
// (nothing was created, so a retry cannot duplicate a post).
func TestTaskSendToAGoneChannel(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	const gone = 987654321012345678
	_, _, err := w.a.sendTaskMessage(context.Background(), w.guild, gone, TaskMessage{Content: "x", AllowedMentions: TaskMentions{Parse: []string{}}})
	if err == nil || IsUncertain(err) || !isNotFound(err) || !strings.Contains(err.Error(), "channel 987654321012345678 no longer exists") {
		t.Fatalf("a send to a gone channel = %v, want a plain failure saying the channel no longer exists (Discord's 404 kept)", err)
	}
}
