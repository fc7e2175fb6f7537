package e2e

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/internal/browsertest"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// failSwitch makes a module's scheduled-result handlers fail while on.
type failSwitch struct{ on atomic.Bool }

// errKudosSwitched is the failure the switch injects.
var errKudosSwitched = errors.New("the e2e test switched kudos' results handler off")

// switchedSpec is spec with every scheduled-result handler its module
// registers wrapped by sw: the module itself stays real (its Start, its
// handler, its ledger), only its Runtime's ScheduledResults port is
// decorated.
func switchedSpec(spec sdk.Spec, sw *failSwitch) sdk.Spec {
	create := spec.Create
	spec.Create = func(lc sdk.LoadContext) (sdk.Module, error) {
		m, err := create(lc)
		if err != nil {
			return nil, err
		}
		return switchedModule{Module: m, sw: sw}, nil
	}
	return spec
}

// switchedModule starts its module with a decorated results port.
type switchedModule struct {
	sdk.Module
	sw *failSwitch
}

func (m switchedModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	if rt.ScheduledResults != nil {
		cp := *rt
		cp.ScheduledResults = switchedResults{ScheduledResults: rt.ScheduledResults, sw: m.sw}
		rt = &cp
	}
	return m.Module.Start(ctx, rt)
}

// switchedResults registers each handler behind the switch.
type switchedResults struct {
	sdk.ScheduledResults
	sw *failSwitch
}

var _ sdk.ScheduledResults = switchedResults{}

func (r switchedResults) Subscribe(ctx context.Context, name string, guildID uint64, h sdk.ScheduledResultHandler) error {
	return r.ScheduledResults.Subscribe(ctx, name, guildID, func(ctx context.Context, res sdk.ScheduledResult, files sdk.ScheduledResultFiles) error {
		if r.sw.on.Load() {
			return errKudosSwitched
		}
		return h(ctx, res, files)
	})
}

// e2eText waits until an element with the test id contains text (a wait,
// not a read: live regions are re-rendered under a read).
func e2eText(testid, text string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="` + testid + `" and contains(., "` + text + `")]`))
}

// TestBrowserE2EScheduledTaskInTheDemo: `kimi serve --demo` with kudos
// (its results subscriber in the demo guild), in a real headless Chromium:
// create a task in the demo guild on /tasks/new, run it now, see its post
// in #general on /demo and kudos' subscription acknowledge the
// notification on /results; then with kudos' handler failing, run it
// again, see the notification waiting for a retry with its error, switch
// the failure off, click Retry now and see it acknowledged.
func TestBrowserE2EScheduledTaskInTheDemo(t *testing.T) {
	sw := &failSwitch{}
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{switchedSpec(kudos.Spec(), sw)}, modules: kudos.Name,
		seed: func(*fakediscord.Server) {}})
	tb := newE2ETab(t)
	guild, general := a.Demo().GuildID, a.Demo().Channels[1]
	owner := a.Discord().Guild(guild).OwnerID
	sub := kudos.Name + "-" + kudos.ResultSubscription + "-" + guild // the /results test key
	subPath := "/results/" + kudos.Name + "/" + kudos.ResultSubscription + "/" + guild
	const name = "Browser digest"

	tb.signIn(a.URL())
	// kudos subscribed at start: its subscription is listed, nothing
	// acknowledged yet.
	tb.do("kudos' subscription is listed", chromedp.Navigate(a.URL()+"/results"),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="result-count-`+sub+`-`+string(results.StatusAcknowledged)+`" and normalize-space(.)="0"]`)))

	// 1. The task, through the form (the guild prefilled by ?guild=).
	tb.do("create the task",
		chromedp.Navigate(a.URL()+"/tasks/new?guild="+guild),
		e2eVisible(`[data-testid=task-form]`),
		e2eFill(`#task-name`, name),
		e2eFill(`#task-owner`, owner),
		e2eFill(`#task-destinations`, general),
		e2eFill(`#task-content`, "Hello from {task}"),
		// Once, far in the future: only run-now posts.
		chromedp.SetValue(chromedp.CSS(`#task-kind`), "once"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#task-time').value = ''`),
		e2eFill(`#task-at`, "2099-12-24 18:00"),
		e2eClick(`[data-testid=task-save]`),
		// The task's page, a new document: the form has no success alert.
		e2eText("alert-success", "Task "+name+" created."),
		e2eText("task-content", "Hello from {task}"),
		e2eText("task-no-runs", "No runs yet."),
	)

	// 2. Run now: the run completes and its post shows in #general.
	tb.do("run it now",
		e2eClick(`[data-testid=task-run-now]`),
		e2eText("alert-success", "Run started"),
		chromedp.WaitVisible(chromedp.Search(`//*[starts-with(@data-testid, "task-run-status-") and contains(., "completed")]`)),
	)
	tb.do("the post appears on /demo",
		chromedp.Navigate(a.URL()+"/demo?channel="+general),
		e2eVisible(`[data-testid=demo-chat]`),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-messages"]//*[contains(., "Hello from `+name+`")]`)),
	)

	// 3. The notification reached kudos: acknowledged.
	tb.do("kudos acknowledged the notification",
		chromedp.Navigate(a.URL()+"/results"),
		e2eVisible(`[data-testid=results-live]`),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="result-count-`+sub+`-`+string(results.StatusAcknowledged)+`" and normalize-space(.)="1"]`)),
	)

	// 4. kudos' handler fails: the second run's notification waits for a
	// retry, its error shown.
	sw.on.Store(true)
	tb.do("run it again",
		chromedp.Navigate(a.URL()+"/tasks"),
		e2eVisible(`[data-testid=task-table]`),
		browsertest.Click(chromedp.Search(`//a[starts-with(@data-testid, "task-open-") and contains(., "`+name+`")]`)),
		e2eVisible(`[data-testid=task-run-now]`),
		e2eClick(`[data-testid=task-run-now]`),
		e2eText("alert-success", "Run started"),
	)
	retryRow := `//tr[starts-with(@data-testid, "result-row-") and @data-status="` + string(results.StatusRetry) + `"]`
	tb.do("the notification waits for a retry",
		chromedp.Navigate(a.URL()+"/results"),
		e2eVisible(`[data-testid=result-open-`+sub+`]`),
		e2eClick(`[data-testid=result-open-`+sub+`]`),
		e2eVisible(`[data-testid=result-live]`),
		chromedp.WaitVisible(chromedp.Search(retryRow+`//*[contains(., "`+string(results.StatusRetry)+`")]`)),
		chromedp.WaitVisible(chromedp.Search(retryRow+`//*[contains(., "`+results.DetailRaisedPrefix+`")]`)),
		e2eText("result-error-"+sub, results.DetailRaisedPrefix),
		chromedp.WaitVisible(chromedp.Search(retryRow+`//button[starts-with(@data-testid, "result-retry-")]`)),
	)
	ctx, cancel := context.WithTimeout(tb.ctx, e2eWait)
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.evaluate('`+retryRow+`', document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue.dataset.testid`))
	cancel()
	if err != nil || !strings.HasPrefix(id, "result-row-") {
		t.Fatalf("the retrying row's test id = %q, %v", id, err)
	}
	id = strings.TrimPrefix(id, "result-row-")

	sw.on.Store(false)
	tb.do("retry now",
		e2eClick(`[data-testid=result-retry-`+id+`]`),
		e2eText("alert-success", "Retry requested: 1 notification due now."),
		chromedp.WaitVisible(chromedp.Search(`//tr[@data-testid="result-row-`+id+`" and @data-status="`+string(results.StatusAcknowledged)+`"]`)),
	)
	tb.do("both notifications acknowledged",
		chromedp.Navigate(a.URL()+subPath),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="result-count-`+sub+`-`+string(results.StatusAcknowledged)+`" and normalize-space(.)="2"]`)),
	)

	// The fake's model: the bot posted the task twice in #general.
	var posts int
	for _, m := range a.Discord().Messages(general) {
		if m.Author != nil && m.Author.ID == a.Discord().BotID() && m.Content == "Hello from "+name {
			posts++
		}
	}
	if posts != 2 {
		t.Fatalf("the bot posted %q %d times in #general, want 2", "Hello from "+name, posts)
	}
}
