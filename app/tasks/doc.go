// Package tasks holds Kimi's scheduled tasks: definitions, schedules, runs
// and their delivery to Discord; the producer of scheduled results
// (app/results).
//
// So far it holds the pure schedule computation (schedule.go): the kinds of
// schedule an admin defines on /tasks, their validation with per-field
// messages, the next occurrence (DST-safe, in an explicit IANA time zone)
// and the runner's plan after a delay or an outage (catch-up or skip, with a
// bounded record of skipped occurrences). It reads no clock: every function
// takes the instants it reasons about.
package tasks
