// Package e2e holds Kimi's own end-to-end tests: the whole appliance
// composed in-process on kimitest (the same public harness module authors
// use), driven as Discord's members and as the operator, with the admin in
// real headless Chromium where a page's behaviour is what is tested. It
// has no code of its own.
package e2e
