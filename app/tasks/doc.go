// Package tasks holds Kimi's scheduled tasks: definitions, schedules, runs
// and their delivery to Discord; the producer of scheduled results
// (app/results).
//
// So far it holds the pure schedule computation (schedule*.go): the kinds of
// schedule an admin defines on /tasks, their validation with per-field
// messages, the next occurrence (DST-safe, in an explicit IANA time zone)
// and the runner's plan after a delay or an outage (catch-up or skip, with a
// bounded record of skipped occurrences). It reads no clock: every function
// takes the instants it reasons about. And a run's content (content.go):
// the Composer interface a later assistant can fill with a model's output
// and the admin's TemplateComposer, the Output's validation against the
// definition's destinations and mention lists, and Chunk, which splits a
// post to Discord's 2,000 code points (code blocks closed and reopened,
// embed and files on the first chunk, @everyone/@here never pinged).
// And the definitions' store (definition.go, store.go, service.go;
// migration 00009): definitions validated against the guild's
// scheduled_tasks policy and Discord (Checker), revisions, files, runs and
// posts as rows, the next due occurrence kept on the task, every change
// audited, deletion revoking the task's published results. And the
// delivery worker (deliver.go): a run's chunks posted strictly in order
// under a token guard through a Poster (429 retried, other errors failed,
// an error after the send started uncertain and never re-posted), the run
// completed and its publication enqueued (app/results) in the transaction
// that records its last required post, previews never published, at most
// two runs at once, an Authorizer re-checking the owner before each row,
// the log line posted once the run has ended, telling its outcome. And
// the runner (runner.go, runner_*.go): one job per active task on the durable
// scheduler (module JobModule, key the task id, re-set after every change
// and by the job itself at the next occurrence), recovery at Start (a row
// left sending is uncertain, never re-posted), run now, preview, retry of
// an uncertain post, and retention of ended runs by a scheduled job. And
// the facade /tasks acts on (admin.go: Admin, the guild's policy and
// Discord's answers looked up per save). And the tasks' access rule
// (access.go: Access, the Authorizer — the guild's policy, the owner's
// tier, owner and bot able to post — and the results Producer — the task
// still there, its files read from the tasks' own tables) over the ports
// it defines (Members, Checker, Readiness). The Discord Poster, Checker
// and Readiness are app/discord's adapter (app/discord/tasks.go).
package tasks
