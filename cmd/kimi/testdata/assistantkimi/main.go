// Command assistantkimi is Kimi built for the assistant's crash test
// (cmd/kimi/assistant_crash_test.go). Its demo fake Discord keeps its
// state across a kill -9 of the process, and its demo model can be made
// to stall mid-turn:
//
//   - ASSISTANTKIMI_JOURNAL names a JSONL file, the journal of what
//     "Discord" holds in the demo channels: one line per message state
//     (kind "message": channel, id, author, content, reply_to, reactions
//     with their counts and the bot's own, deleted), appended with
//     O_APPEND and fsynced whenever the fake's model changes (fakediscord's
//     Watch) and, for a message a POST created, before the fake answers it
//     (OnMessageCreate); and one line per request the demo model received
//     (kind "model": its messages as "role: content", stalled). At start
//     the journal's last state of each message is put back into the new
//     fake (fakediscord's RestoreMessage), before the bot connects: the
//     restarted binary meets the trigger of the turn the kill cut short
//     with its ⏳ still on it, as it would on Discord.
//   - ASSISTANTKIMI_STALL, when set, makes the demo model stall (no
//     answer, not even headers, until the process dies) on the first
//     request whose last message contains it; every other request gets the
//     demo's script.
//   - A control server on loopback, its URL logged to stderr as
//     "assistantkimi: control url=…", lets the test act as a demo member:
//     POST /post (form: channel, author — a user id —, content, reply_to)
//     posts a message once the bot's gateway session is up and answers
//     its id; GET /wait?after=N answers the journal's line count once it
//     is above N (or after 10 s), so the test waits on changes, not on a
//     clock.
//
// The journal outlives the process that kill -9 ends; the test reads it as
// what Discord showed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// Entry is one line of the journal.
type Entry struct {
	Kind string `json:"kind"` // "message" or "model"
	// A message's state.
	Channel   string     `json:"channel,omitempty"`
	ID        string     `json:"id,omitempty"`
	Author    string     `json:"author,omitempty"`
	Content   string     `json:"content,omitempty"`
	ReplyTo   string     `json:"reply_to,omitempty"`
	Reactions []Reaction `json:"reactions,omitempty"`
	Deleted   bool       `json:"deleted,omitempty"`
	// A model request.
	Messages []string `json:"messages,omitempty"`
	Stalled  bool     `json:"stalled,omitempty"`
}

// Reaction is one emoji on a message.
type Reaction struct {
	Emoji string `json:"emoji"`
	Count int    `json:"count"`
	Me    bool   `json:"me,omitempty"`
}

func main() {
	os.Exit(app.MainWith(context.Background(), os.Args[1:], os.Stdout, os.Stderr,
		app.Extensions{OnDemoFake: onDemoFake, OnDemoModel: onDemoModel}))
}

// jr is the process's journal (nil without ASSISTANTKIMI_JOURNAL).
var jr *journal

func fail(format string, args ...any) {
	// What Discord showed must be known: stop rather than lose it.
	fmt.Fprintf(os.Stderr, "assistantkimi: "+format+"\n", args...)
	os.Exit(1)
}

func onDemoFake(fake *fakediscord.Server, d fakediscord.DemoGuild) {
	path := os.Getenv("ASSISTANTKIMI_JOURNAL")
	if path == "" {
		return
	}
	states, err := replay(path)
	if err != nil {
		fail("read the journal: %v", err)
	}
	ids := make([]string, 0, len(states))
	for id := range states {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, cmpID) // a reply after the message it replies to
	for _, id := range ids {
		e := states[id]
		m := &discordgo.Message{ID: e.ID, ChannelID: e.Channel, Author: &discordgo.User{ID: e.Author}, Content: e.Content}
		if e.ReplyTo != "" {
			m.MessageReference = &discordgo.MessageReference{MessageID: e.ReplyTo}
		}
		for _, r := range e.Reactions {
			name, eid, _ := strings.Cut(r.Emoji, ":")
			m.Reactions = append(m.Reactions, &discordgo.MessageReactions{Emoji: &discordgo.Emoji{Name: name, ID: eid}, Count: r.Count, Me: r.Me})
		}
		if err := fake.RestoreMessage(m); err != nil {
			fail("restore message %s: %v", id, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fail("open the journal: %v", err)
	}
	lines, err := countLines(path)
	if err != nil {
		fail("count the journal's lines: %v", err)
	}
	jr = &journal{f: f, fake: fake, channels: d.Channels, last: states, lines: lines, changed: make(chan struct{})}
	jr.sync() // the restored state is the journal's: nothing to write
	fake.OnMessageCreate(func(*discordgo.Message) { jr.sync() })
	go func() {
		for range fake.Watch(context.Background()) {
			jr.sync()
		}
	}()
	serveControl(fake)
}

func onDemoModel(m *llmfake.Server) {
	marker := os.Getenv("ASSISTANTKIMI_STALL")
	steps := []llmfake.Step{{Repeat: true, Match: llmfake.Match{Func: func(r llmfake.Recorded) bool {
		if jr != nil {
			e := Entry{Kind: "model"}
			for _, msg := range r.Body.Messages {
				e.Messages = append(e.Messages, msg.Role+": "+msg.Content)
			}
			e.Stalled = marker != "" && strings.Contains(r.Body.Last().Content, marker)
			jr.write(e)
		}
		return false // records every request, answers none
	}}}}
	if marker != "" {
		steps = append(steps, llmfake.Step{Match: llmfake.Match{Contains: marker}, Plan: llmfake.Plan{Fail: llmfake.FailStallBeforeHeaders}})
	}
	m.SetSteps(append(steps, llmfake.Demo()...)...)
}

// journal appends what changed in the demo channels to the file.
type journal struct {
	f        *os.File
	fake     *fakediscord.Server
	channels []string

	mu      sync.Mutex
	last    map[string]Entry // each message's state as last written
	lines   int
	changed chan struct{} // closed and replaced at every write
}

// sync writes the demo channels' messages whose state changed since they
// were last written, and the deletion of those gone. The snapshot is taken
// under the journal's lock, so a later state is never overwritten by an
// earlier one.
func (j *journal) sync() {
	j.mu.Lock()
	defer j.mu.Unlock()
	seen := map[string]bool{}
	for _, ch := range j.channels {
		for _, m := range j.fake.Messages(ch) {
			e := entryOf(m)
			seen[e.ID] = true
			if prev, ok := j.last[e.ID]; ok && sameState(prev, e) {
				continue
			}
			j.last[e.ID] = e
			j.writeLocked(e)
		}
	}
	for id, e := range j.last {
		if !seen[id] {
			delete(j.last, id)
			e.Deleted, e.Reactions = true, nil
			j.writeLocked(e)
		}
	}
}

func (j *journal) write(e Entry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.writeLocked(e)
}

func (j *journal) writeLocked(e Entry) {
	line, err := json.Marshal(e)
	if err != nil {
		fail("encode a journal line: %v", err)
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		fail("write the journal: %v", err)
	}
	if err := j.f.Sync(); err != nil {
		fail("sync the journal: %v", err)
	}
	j.lines++
	close(j.changed)
	j.changed = make(chan struct{})
}

// wait returns the line count once it is above after, or when ctx ends.
func (j *journal) wait(ctx context.Context, after int) int {
	for {
		j.mu.Lock()
		n, changed := j.lines, j.changed
		j.mu.Unlock()
		if n > after {
			return n
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return n
		}
	}
}

func entryOf(m *discordgo.Message) Entry {
	e := Entry{Kind: "message", Channel: m.ChannelID, ID: m.ID, Content: m.Content}
	if m.Author != nil {
		e.Author = m.Author.ID
	}
	if m.MessageReference != nil {
		e.ReplyTo = m.MessageReference.MessageID
	}
	for _, r := range m.Reactions {
		if r.Emoji == nil {
			continue
		}
		name := r.Emoji.Name
		if r.Emoji.ID != "" {
			name += ":" + r.Emoji.ID
		}
		e.Reactions = append(e.Reactions, Reaction{Emoji: name, Count: r.Count, Me: r.Me})
	}
	return e
}

func sameState(a, b Entry) bool {
	return a.Channel == b.Channel && a.Author == b.Author && a.Content == b.Content && a.ReplyTo == b.ReplyTo &&
		a.Deleted == b.Deleted && slices.Equal(a.Reactions, b.Reactions)
}

// replay folds the journal's message lines into each message's last state
// (a deleted message dropped); the model's lines are the test's alone.
func replay(path string) (map[string]Entry, error) {
	out := map[string]Entry{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		switch {
		case e.Kind != "message":
		case e.Deleted:
			delete(out, e.ID)
		default:
			out[e.ID] = e
		}
	}
	return out, sc.Err()
}

func countLines(path string) (int, error) {
	b, err := os.ReadFile(path)
	return strings.Count(string(b), "\n"), err
}

// cmpID orders snowflakes numerically.
func cmpID(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// controlWait bounds the control server's waits.
const controlWait = 10 * time.Second

func serveControl(fake *fakediscord.Server) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen for the control: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /post", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), controlWait)
		defer cancel()
		if !gatewayUp(ctx, fake) {
			http.Error(w, "the bot's gateway session is not up", http.StatusServiceUnavailable)
			return
		}
		m, err := fake.PostReply(r.FormValue("channel"), r.FormValue("author"), r.FormValue("content"), r.FormValue("reply_to"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, m.ID)
	})
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.FormValue("after"))
		ctx, cancel := context.WithTimeout(r.Context(), controlWait)
		defer cancel()
		fmt.Fprint(w, jr.wait(ctx, after))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: controlWait}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "assistantkimi: control url=http://%s\n", ln.Addr())
}

// gatewayUp waits until a gateway session identified and is connected.
func gatewayUp(ctx context.Context, fake *fakediscord.Server) bool {
	changes := fake.Watch(ctx)
	for {
		if st := fake.GatewayStats(); st.Connections > 0 && st.Identifies > 0 {
			return true
		}
		select {
		case _, ok := <-changes:
			if !ok {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}
