package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
)

const (
	// crashTasks tasks of crashParagraphs paragraphs each: one run each
	// (a once schedule), of crashParagraphs chunks.
	crashTasks      = 30
	crashParagraphs = 5
	crashKills      = 5
	// crashDelayMs is how long the fake holds each answer after it
	// recorded the message (testdata/taskskimi's TASKSKIMI_DELAY_MS).
	crashDelayMs = 40
)

// received is a line of taskskimi's log: a message the fake created.
type received struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
	Content string `json:"content"`
}

// readReceived reads the fake's log; every line must be whole.
func readReceived(t *testing.T, path string) []received {
	t.Helper()
	return readJSONLines[received](t, path, "the fake's log")
}

// readJSONLines reads a JSONL file a test binary's fake wrote (nil while
// it does not exist); every line must be whole, what names the file in a
// failure.
func readJSONLines[T any](t *testing.T, path, what string) []T {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d of %s: %v: %q", len(out)+1, what, err, sc.Text())
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lineCount counts the log's lines (0 before the fake wrote one).
func lineCount(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// anyChecker says yes to every channel: the demo's channels are text
// channels the bot and the guild's owner post in.
type anyChecker struct{}

var _ tasks.Checker = anyChecker{}

func (anyChecker) ChannelKind(context.Context, uint64, uint64) (tasks.ChannelKind, error) {
	return tasks.ChannelText, nil
}
func (anyChecker) CanPost(context.Context, uint64, uint64, uint64, tasks.Needs) (bool, error) {
	return true, nil
}
func (anyChecker) UploadLimit(context.Context, uint64) (int64, error) { return 25 << 20, nil }

// crashTemplate is crashParagraphs paragraphs of about 1,450 code points,
// each opened and closed by its marker "{task} run {run} paragraph n": the
// chunker cuts at each blank line (a chunk holds at most 2,000), so every
// chunk is one paragraph and unique.
func crashTemplate() string {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 52)
	var b strings.Builder
	for p := 1; p <= crashParagraphs; p++ {
		if p > 1 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[{task} run {run} paragraph %d] %s[end of {task} paragraph %d]", p, filler, p)
	}
	return b.String()
}

// TestTaskDeliverySurvivesKill9: 30 tasks in the demo guild, each of one
// run of 5 chunks, are delivered by the built binary to its demo fake,
// which records every message it created (id, channel, content) to disk
// before it answers. The binary is killed with kill -9 five times while
// the posts are delivered (each kill once the fake's log grew by a random
// 2..9 messages since the start), restarted each time, then left to
// settle and stopped gracefully; the kills and the settling take seconds. From the store and the fake's log:
//   - every post row is sent or uncertain, or pending behind an uncertain
//     row of a lower seq in its run (that run ended uncertain and its
//     delivery stopped there: an uncertain post is never re-sent
//     automatically); none is left sending or failed;
//   - every sent row's content is in the log exactly once, under its
//     message id and channel; a pending row's never; an uncertain row's
//     once or not at all;
//   - no content is in the log twice (nothing was re-posted) and the log
//     holds only the rows' contents;
//   - the chunks of one run are in the log in seq order;
//   - each task made one run; a completed run has every row sent, an
//     uncertain one exactly one uncertain row, sent rows before it and
//     pending ones after.
func TestTaskDeliverySurvivesKill9(t *testing.T) {
	began := time.Now()
	bin := buildTestdata(t, "taskskimi")
	built := time.Now()
	t.Logf("built in %s", built.Sub(began).Round(100*time.Millisecond))
	dataDir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "received.jsonl")
	// The scheduler's lease is 1 s: a task's due job the kill cut short is
	// claimed again a second after the restart, not the default minute.
	env := testEnv(dataDir, "KIMI_DEMO=true", "KIMI_SCHEDULER_LEASE=1s", "TASKSKIMI_LOG="+logPath, "TASKSKIMI_DELAY_MS="+strconv.Itoa(crashDelayMs))
	dbPath := filepath.Join(dataDir, "kimi.db")

	migrate := exec.Command(bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate up: %v\n%s", err, out)
	}

	// The demo guild's ids are fixed (fakediscord's demoID): a fake seeded
	// here has the ones the binary's will have.
	seed := fakediscord.New(fakediscord.Options{})
	demo := seed.SeedDemo()
	owner := seed.Guild(demo.GuildID).OwnerID
	seed.Close()
	parse := func(s string) uint64 {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	guild := parse(demo.GuildID)
	var channels []uint64
	for _, c := range demo.Channels {
		channels = append(channels, parse(c))
	}

	// The tasks, created before the first start: once, a few seconds from
	// now (catch-up if the start is late), each to one demo channel.
	func() {
		ctx := context.Background()
		st, err := store.Open(ctx, dbPath, store.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		svc, err := tasks.New(tasks.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		policy := guildcfg.TaskPolicy{Enabled: true, Timezone: "UTC", Destinations: channels}
		at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
		for i := range crashTasks {
			def := tasks.Definition{GuildID: guild, Name: fmt.Sprintf("crash-%02d", i), OwnerID: parse(owner),
				Schedule: map[string]string{tasks.FieldKind: "once", tasks.FieldAt: at, tasks.FieldTimezone: "UTC", tasks.FieldLate: "catch_up"},
				Template: crashTemplate(), Destinations: []uint64{channels[i%len(channels)]}}
			if _, err := svc.Create(ctx, "crash test", policy, anyChecker{}, def); err != nil {
				t.Fatalf("create task %d: %v", i, err)
			}
		}
	}()

	ro, count := openCounter(t, dbPath)
	// deliverable counts the rows a delivery may still send: pending or
	// sending rows of runs not ended (an ended run's pending rows are
	// behind its uncertain row), and the runs not yet prepared.
	deliverable := func() int {
		return count(`SELECT count(*) FROM kimi_task_posts p JOIN kimi_task_runs r ON r.id = p.run_id
			WHERE p.status IN ('pending', 'sending') AND r.status NOT IN ('completed', 'failed', 'uncertain')`) +
			count(`SELECT count(*) FROM kimi_tasks t WHERE NOT EXISTS (SELECT 1 FROM kimi_task_runs r WHERE r.task_id = t.id)`) +
			count(`SELECT count(*) FROM kimi_task_runs WHERE status IN ('pending', 'running')`)
	}

	// One guard against a hang for the kills and the settling together
	// (they take seconds; this is not a timed assertion).
	deadline := time.Now().Add(2 * startTimeout)
	srv := startBinary(t, bin, env)
	kills := 0
	for kills < crashKills {
		target := lineCount(logPath) + 2 + rand.IntN(8)
		for lineCount(logPath) < target && deliverable() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: the fake's log has %d messages, waiting for %d; log:\n%s", kills+1, lineCount(logPath), target, srv.log())
			}
			time.Sleep(2 * time.Millisecond)
		}
		if deliverable() == 0 {
			break // nothing left to kill in
		}
		srv.kill9()
		kills++
		t.Logf("%s: kill -9 #%d: %d messages received, %d rows sent, %d uncertain, %d rows or runs left to deliver", time.Since(built).Round(100*time.Millisecond), kills, lineCount(logPath),
			count(`SELECT count(*) FROM kimi_task_posts WHERE status = 'sent'`), count(`SELECT count(*) FROM kimi_task_posts WHERE status IN ('uncertain', 'sending')`), deliverable())
		srv = startBinary(t, bin, env)
	}
	if kills < crashKills {
		t.Fatalf("only %d of %d kills came during delivery (raise crashTasks)", kills, crashKills)
	}

	for deliverable() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows still to deliver; log:\n%s", deliverable(), srv.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := srv.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, srv.log())
	}
	t.Logf("%s: settled and stopped", time.Since(built).Round(100*time.Millisecond))

	// What Discord received, by content.
	got := readReceived(t, logPath)
	byContent := map[string][]int{} // content → its lines
	for i, r := range got {
		byContent[r.Content] = append(byContent[r.Content], i)
	}
	for c, lines := range byContent {
		if len(lines) > 1 {
			t.Errorf("re-posted: %d messages (lines %v) of %.60q", len(lines), lines, c)
		}
	}

	if n := count(`SELECT count(*) FROM kimi_task_runs`); n != crashTasks {
		t.Fatalf("%d runs, want %d (one per task)", n, crashTasks)
	}
	type row struct {
		run               string
		runStatus         string
		seq, index, total int
		channel, message  uint64
		content, status   string
	}
	rs, err := ro.Query(`SELECT p.run_id, r.status, p.seq, p.chunk_index, p.chunk_total, p.channel_id, p.message_id, p.content, p.status
		FROM kimi_task_posts p JOIN kimi_task_runs r ON r.id = p.run_id ORDER BY p.run_id, p.seq`)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for rs.Next() {
		var r row
		var ch, msg int64
		if err := rs.Scan(&r.run, &r.runStatus, &r.seq, &r.index, &r.total, &ch, &msg, &r.content, &r.status); err != nil {
			t.Fatal(err)
		}
		r.channel, r.message = uint64(ch), uint64(msg)
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	if len(rows) != crashTasks*crashParagraphs {
		t.Fatalf("%d post rows, want %d (%d chunks of each of %d runs)", len(rows), crashTasks*crashParagraphs, crashParagraphs, crashTasks)
	}

	known := map[string]bool{}
	var sent, uncertain, uncertainReceived, pending, completed, uncertainRuns int
	byRun := map[string][]row{}
	for _, r := range rows {
		known[r.content] = true
		byRun[r.run] = append(byRun[r.run], r)
		lines := byContent[r.content]
		switch r.status {
		case "sent":
			sent++
			if len(lines) != 1 {
				t.Errorf("run %s post %d: sent, in the fake's log %d times", r.run, r.seq, len(lines))
				continue
			}
			g := got[lines[0]]
			if g.ID != strconv.FormatUint(r.message, 10) || g.Channel != strconv.FormatUint(r.channel, 10) {
				t.Errorf("run %s post %d: sent as %d in %d, received as %s in %s", r.run, r.seq, r.message, r.channel, g.ID, g.Channel)
			}
		case "uncertain":
			uncertain++
			uncertainReceived += len(lines)
		case "pending":
			pending++
			if len(lines) != 0 {
				t.Errorf("run %s post %d: pending, yet received", r.run, r.seq)
			}
		default:
			t.Errorf("run %s post %d: left %s", r.run, r.seq, r.status)
		}
	}
	for c := range byContent {
		if !known[c] {
			t.Errorf("received a message that is no post row's: %.60q", c)
		}
	}
	for id, posts := range byRun {
		if len(posts) != crashParagraphs {
			t.Errorf("run %s: %d rows, want %d", id, len(posts), crashParagraphs)
		}
		// The chunks in seq order, in the store and in the fake's log.
		last := -1
		for i, p := range posts {
			if p.seq != i+1 || p.index != i+1 || p.total != crashParagraphs {
				t.Errorf("run %s: row %d is seq %d, chunk %d of %d", id, i, p.seq, p.index, p.total)
			}
			if !strings.HasPrefix(p.content, "[crash-") || !strings.Contains(p.content, fmt.Sprintf("paragraph %d]", i+1)) {
				t.Errorf("run %s post %d: chunk of another paragraph: %.60q", id, p.seq, p.content)
			}
			if lines := byContent[p.content]; len(lines) == 1 {
				if lines[0] < last {
					t.Errorf("run %s: post %d received before post %d", id, p.seq, i)
				}
				last = lines[0]
			}
		}
		// The run's outcome and its rows: sent*, then uncertain pending*.
		cut := len(posts)
		for i, p := range posts {
			if p.status != "sent" {
				cut = i
				break
			}
		}
		switch st := posts[0].runStatus; st {
		case "completed":
			completed++
			if cut != len(posts) {
				t.Errorf("run %s: completed with post %d %s", id, posts[cut].seq, posts[cut].status)
			}
		case "uncertain":
			uncertainRuns++
			if cut == len(posts) || posts[cut].status != "uncertain" {
				t.Errorf("run %s: uncertain without an uncertain post after its sent ones", id)
				break
			}
			for _, p := range posts[cut+1:] {
				if p.status != "pending" {
					t.Errorf("run %s: post %d %s after the uncertain post %d", id, p.seq, p.status, posts[cut].seq)
				}
			}
		default:
			t.Errorf("run %s: left %s", id, st)
		}
	}
	if completed+uncertainRuns != crashTasks {
		t.Errorf("%d completed and %d uncertain runs of %d", completed, uncertainRuns, crashTasks)
	}
	// A kill in mid-send leaves an uncertain row: with two deliveries each
	// holding its answer crashDelayMs, kills that come while the log grows
	// cannot all miss one.
	if uncertain == 0 {
		t.Errorf("no post row uncertain after %d kills during delivery: none came in mid-send", kills)
	}
	// The task of an uncertain run needs attention; the others, done,
	// stay active with no occurrence left.
	if n := count(`SELECT count(*) FROM kimi_tasks WHERE state = 'needs_attention'`); n != uncertainRuns {
		t.Errorf("%d tasks need attention, want %d (one per uncertain run)", n, uncertainRuns)
	}
	if n := count(`SELECT count(*) FROM kimi_tasks WHERE state = 'active' AND next_due_ms = 0`); n != completed {
		t.Errorf("%d tasks active with no next occurrence, want %d (one per completed run)", n, completed)
	}
	t.Logf("%d runs (%d completed, %d uncertain), %d post rows: %d sent, %d uncertain (%d of them received), %d pending behind them; %d messages received; %d kills; %s in all",
		crashTasks, completed, uncertainRuns, len(rows), sent, uncertain, uncertainReceived, pending, len(got), kills, time.Since(began).Round(100*time.Millisecond))
}
