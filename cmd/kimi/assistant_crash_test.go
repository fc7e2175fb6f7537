package main

import (
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// journalEntry is a line of testdata/assistantkimi's journal (its Entry).
type journalEntry struct {
	Kind      string            `json:"kind"`
	Channel   string            `json:"channel"`
	ID        string            `json:"id"`
	Author    string            `json:"author"`
	Content   string            `json:"content"`
	ReplyTo   string            `json:"reply_to"`
	Reactions []journalReaction `json:"reactions"`
	Deleted   bool              `json:"deleted"`
	Messages  []string          `json:"messages"`
	Stalled   bool              `json:"stalled"`
}

type journalReaction struct {
	Emoji string `json:"emoji"`
	Count int    `json:"count"`
	Me    bool   `json:"me"`
}

// journal is what the demo fake showed, read from the file.
type journal []journalEntry

// readJournal reads the journal; every line must be whole.
func readJournal(t *testing.T, path string) journal {
	t.Helper()
	return readJSONLines[journalEntry](t, path, "the journal")
}

// message is a message's last state (ok false: never seen, or deleted).
func (j journal) message(id string) (journalEntry, bool) {
	var last journalEntry
	seen := false
	for _, e := range j {
		if e.Kind == "message" && e.ID == id {
			last, seen = e, !e.Deleted
		}
	}
	return last, seen
}

// botReaction reports whether the bot's own emoji is on the message now.
func (j journal) botReaction(id, emoji string) bool {
	m, ok := j.message(id)
	return ok && slices.ContainsFunc(m.Reactions, func(r journalReaction) bool { return r.Emoji == emoji && r.Me })
}

// repliesBy lists the messages by author that ever replied to id, each
// once, with their last content.
func (j journal) repliesBy(author, id string) []journalEntry {
	var ids []string
	for _, e := range j {
		if e.Kind == "message" && e.Author == author && e.ReplyTo == id && !slices.Contains(ids, e.ID) {
			ids = append(ids, e.ID)
		}
	}
	out := make([]journalEntry, 0, len(ids))
	for _, mid := range ids {
		var last journalEntry
		for _, e := range j {
			if e.Kind == "message" && e.ID == mid {
				last = e
			}
		}
		out = append(out, last)
	}
	return out
}

// answer is the demo model's answer to id by the bot, "" for none.
func (j journal) answer(bot, id string) (string, string) {
	for _, e := range j.repliesBy(bot, id) {
		if !e.Deleted && strings.HasPrefix(e.Content, "(demo model) ") {
			return e.ID, e.Content
		}
	}
	return "", ""
}

// modelRequests are the demo model's requests, in order.
func (j journal) modelRequests() []journalEntry {
	var out []journalEntry
	for _, e := range j {
		if e.Kind == "model" {
			out = append(out, e)
		}
	}
	return out
}

// control is testdata/assistantkimi's control server.
type control struct {
	t       *testing.T
	url     string
	journal string
}

func controlOf(t *testing.T, srv *server, journalPath string) *control {
	t.Helper()
	const prefix = "assistantkimi: control url="
	lines := srv.linesContaining(prefix)
	if len(lines) != 1 {
		t.Fatalf("%d control lines in the log:\n%s", len(lines), srv.log())
	}
	return &control{t: t, url: strings.TrimPrefix(lines[0], prefix), journal: journalPath}
}

// post posts content as author in channel (a reply to replyTo unless ""),
// once the bot's gateway session is up, and returns the message's id.
func (c *control) post(channel, author, content, replyTo string) string {
	c.t.Helper()
	resp, err := httpClient.PostForm(c.url+"/post", url.Values{"channel": {channel}, "author": {author}, "content": {content}, "reply_to": {replyTo}})
	if err != nil {
		c.t.Fatalf("post %q: %v", content, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		c.t.Fatalf("post %q: %d %s", content, resp.StatusCode, body)
	}
	return string(body)
}

// await reads the journal until cond holds, waiting for its next line
// between two reads (the control's /wait: no clock), bounded by
// startTimeout against a hang.
func (c *control) await(what string, cond func(journal) bool) journal {
	c.t.Helper()
	deadline := time.Now().Add(startTimeout)
	lines := -1
	for {
		j := readJournal(c.t, c.journal)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("gave up waiting: %s; journal:\n%s", what, dumpJournal(j))
		}
		if lines < 0 {
			lines = len(j)
		}
		resp, err := httpClient.Get(c.url + "/wait?after=" + strconv.Itoa(lines))
		if err != nil {
			c.t.Fatalf("wait for the journal: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if lines, err = strconv.Atoi(string(body)); err != nil {
			c.t.Fatalf("wait for the journal: %q", body)
		}
	}
}

func dumpJournal(j journal) string {
	var b strings.Builder
	for _, e := range j {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// stallMarker in a question makes the first run's demo model stall on it.
const stallMarker = "[stall]"

// TestAssistantTurnSurvivesKill9: the built binary in demo mode, its fake
// Discord journalled to disk and replayed at each start
// (testdata/assistantkimi), so "Discord" outlives the process. A member
// asks the bot and gets the demo model's answer; her reply to that answer
// starts a second turn of the same conversation, on which the model
// stalls; with the turn running (its row 'running', ⏳ on the trigger,
// the model holding the request) the binary is killed with kill -9 and
// started again, the stall off. Then:
//   - the cut turn's row is 'interrupted', the bot's ⏳ is gone from its
//     trigger, with no ✅ or ❌, and so is its status message (Thinking...,
//     recorded on the row when it was sent);
//   - the cut trigger got no answer (nor one posted twice), and the first
//     question exactly one;
//   - her next reply to the first answer continues the conversation: the
//     same conversation's turn, done (✅), answered once by the demo model,
//     whose request carries the conversation's history;
//   - SIGTERM stops the binary with exit code 0.
func TestAssistantTurnSurvivesKill9(t *testing.T) {
	began := time.Now()
	bin := buildTestdata(t, "assistantkimi")
	built := time.Now()
	t.Logf("built in %s", built.Sub(began).Round(100*time.Millisecond))
	dataDir := t.TempDir()
	journalPath := filepath.Join(t.TempDir(), "discord.jsonl")
	env := testEnv(dataDir, "KIMI_DEMO=true", "ASSISTANTKIMI_JOURNAL="+journalPath)
	dbPath := filepath.Join(dataDir, "kimi.db")

	// The demo guild's ids are fixed (fakediscord's demoID): a fake seeded
	// here has the ones the binary's has.
	seed := fakediscord.New(fakediscord.Options{})
	demo := seed.SeedDemo()
	bot := seed.BotID()
	seed.Close()
	channel, ada := demo.Channels[1], demo.Members[0]
	mention := "<@" + bot + "> "

	srv := startBinary(t, bin, append(env, "ASSISTANTKIMI_STALL="+stallMarker))
	ctl := controlOf(t, srv, journalPath)
	q1 := ctl.post(channel, ada, mention+"what does kill -9 do?", "")
	j := ctl.await("the answer to the first question and its ✅", func(j journal) bool {
		a, _ := j.answer(bot, q1)
		return a != "" && j.botReaction(q1, assistant.ReactDone)
	})
	a1, a1Text := j.answer(bot, q1)
	q2 := ctl.post(channel, ada, "and what if "+stallMarker+" it comes mid-turn?", a1)
	j = ctl.await("the second turn running: ⏳ on its trigger, its status message, the model holding its request", func(j journal) bool {
		stalled := slices.ContainsFunc(j.modelRequests(), func(e journalEntry) bool { return e.Stalled })
		return stalled && j.botReaction(q2, assistant.ReactWorking)
	})
	// The status message went out before the model's request.
	var status string
	for _, e := range j.repliesBy(bot, q2) {
		if !e.Deleted && e.Content == assistant.ThinkingText {
			status = e.ID
		}
	}
	if status == "" {
		t.Fatalf("no status message replying to the cut trigger; journal:\n%s", dumpJournal(j))
	}
	ro, count := openCounter(t, dbPath)
	turnOf := func(trigger string) (conversation int64, status string) {
		t.Helper()
		if err := ro.QueryRow(`SELECT conversation_id, status FROM kimi_assistant_turns WHERE trigger_message_id = ?`, trigger).Scan(&conversation, &status); err != nil {
			t.Fatalf("the turn of %s: %v", trigger, err)
		}
		return conversation, status
	}
	conv1, st1 := turnOf(q1)
	conv2, st2 := turnOf(q2)
	if st1 != assistant.StatusDone || st2 != "running" || conv2 != conv1 {
		t.Fatalf("before the kill: the first turn %s in conversation %d, the second %s in %d; want done, then running in the same",
			st1, conv1, st2, conv2)
	}
	if n := count(`SELECT count(*) FROM kimi_assistant_turns WHERE trigger_message_id = ? AND status_message_id = ?`, q2, status); n != 1 {
		t.Fatalf("the running turn has not recorded its status message %s", status)
	}
	srv.kill9()
	t.Logf("%s: kill -9 mid-turn", time.Since(built).Round(100*time.Millisecond))

	srv = startBinary(t, bin, env)
	ctl = controlOf(t, srv, journalPath)
	ctl.await("the bot's ⏳ removed from the cut trigger and its status message deleted", func(j journal) bool {
		_, ok := j.message(q2)
		_, shown := j.message(status)
		return ok && !j.botReaction(q2, assistant.ReactWorking) && !shown
	})
	if _, st := turnOf(q2); st != assistant.StatusInterrupted {
		t.Fatalf("the cut turn is %s, want %s", st, assistant.StatusInterrupted)
	}
	q3 := ctl.post(channel, ada, "are you back?", a1)
	j = ctl.await("the answer to the reply after the restart and its ✅", func(j journal) bool {
		a, _ := j.answer(bot, q3)
		return a != "" && j.botReaction(q3, assistant.ReactDone)
	})
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, srv.log())
	}
	t.Logf("%s: answered after the restart and stopped", time.Since(built).Round(100*time.Millisecond))

	j = readJournal(t, journalPath)
	if conv3, st3 := turnOf(q3); st3 != assistant.StatusDone || conv3 != conv1 {
		t.Errorf("the reply after the restart: turn %s in conversation %d, want done in %d", st3, conv3, conv1)
	}
	if n := count(`SELECT count(*) FROM kimi_assistant_turns`); n != 3 {
		t.Errorf("%d turns, want 3", n)
	}
	m2, _ := j.message(q2)
	for _, r := range m2.Reactions {
		if r.Me {
			t.Errorf("the cut trigger carries the bot's %s", r.Emoji)
		}
	}
	for _, e := range j.repliesBy(bot, q2) {
		if !e.Deleted {
			t.Errorf("the bot's %q still replies to the cut trigger", e.Content)
		}
	}
	for _, tc := range []struct {
		name, trigger string
		answers       int
	}{
		{"the first question", q1, 1},
		{"the cut trigger", q2, 0},
		{"the reply after the restart", q3, 1},
	} {
		var answers []string
		for _, e := range j.repliesBy(bot, tc.trigger) {
			if strings.HasPrefix(e.Content, "(demo model) ") {
				answers = append(answers, e.Content)
			}
		}
		if len(answers) != tc.answers {
			t.Errorf("%s: %d answers %q, want %d", tc.name, len(answers), answers, tc.answers)
		}
	}
	// The model saw the conversation: the first question and its answer
	// before the reply.
	var last journalEntry
	for _, e := range j.modelRequests() {
		if len(e.Messages) > 0 && strings.Contains(e.Messages[len(e.Messages)-1], "are you back?") {
			last = e
		}
	}
	if last.Messages == nil {
		t.Fatalf("no model request for the reply after the restart; journal:\n%s", dumpJournal(j))
	}
	history := strings.Join(last.Messages, "\n")
	for _, want := range []string{"what does kill -9 do?", a1Text} {
		if !strings.Contains(history, want) {
			t.Errorf("the reply's model request lacks %q:\n%s", want, history)
		}
	}
	t.Logf("%s in all", time.Since(began).Round(100*time.Millisecond))
}
