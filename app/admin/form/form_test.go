package form

import "testing"

func TestErrorsKeepTheFirstMessage(t *testing.T) {
	var e Errors
	if !e.OK() || e.Has("a") {
		t.Fatalf("zero Errors = %v, want OK and empty", e)
	}
	e.Add("a", "first")
	e.Add("a", "second")
	e.Add(FieldForm, "whole form")
	if got := e.Get("a"); got != "first" {
		t.Errorf("Get(a) = %q, want the first message", got)
	}
	if e.OK() || !e.Has(FieldForm) || len(e) != 2 {
		t.Errorf("Errors = %v, want two messages", e)
	}
}
