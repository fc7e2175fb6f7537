// Command taskskimi is Kimi built for the scheduled tasks' crash test
// (cmd/kimi/tasks_crash_test.go). In demo mode (`serve --demo`) its
// built-in fake Discord records every message a POST created to the JSONL
// file named by TASKSKIMI_LOG — one line {"channel", "id", "content"} per
// message, written with O_APPEND and fsynced inside fakediscord's
// OnMessageCreate hook, so a message "Discord" created is on disk before
// Kimi has the answer — then waits TASKSKIMI_DELAY_MS before the fake
// answers, so that a delivery is slow enough to be killed in mid-send.
// The file outlives the process that kill -9 ends; the test reads it as
// what Discord received.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// Received is one line of the log: a message the fake created.
type Received struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
	Content string `json:"content"`
}

func main() {
	os.Exit(app.MainWith(context.Background(), os.Args[1:], os.Stdout, os.Stderr,
		app.Extensions{OnDemoFake: onDemoFake}))
}

func onDemoFake(fake *fakediscord.Server, _ fakediscord.DemoGuild) {
	path := os.Getenv("TASKSKIMI_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "taskskimi: open the received log: %v\n", err)
		os.Exit(1)
	}
	delay, _ := strconv.Atoi(os.Getenv("TASKSKIMI_DELAY_MS"))
	var mu sync.Mutex
	fake.OnMessageCreate(func(m *discordgo.Message) {
		line, err := json.Marshal(Received{Channel: m.ChannelID, ID: m.ID, Content: m.Content})
		if err != nil {
			panic(err)
		}
		mu.Lock()
		_, err = f.Write(append(line, '\n'))
		if err == nil {
			err = f.Sync()
		}
		mu.Unlock()
		if err != nil {
			// What Discord received must be known: stop rather than lose it.
			fmt.Fprintf(os.Stderr, "taskskimi: record a received message: %v\n", err)
			os.Exit(1)
		}
		time.Sleep(time.Duration(delay) * time.Millisecond)
	})
}
