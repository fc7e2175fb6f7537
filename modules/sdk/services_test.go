package sdk

import (
	"errors"
	"testing"
)

func TestValidateServices(t *testing.T) {
	decl := func(n string, v int) ServiceDeclaration { return ServiceDeclaration{n, v} }
	req := func(n string, v int, p string) ServiceRequirement { return ServiceRequirement{n, v, p} }
	tests := []struct {
		name     string
		deps     []string
		provides []ServiceDeclaration
		consumes []ServiceRequirement
		want     string
	}{
		{"ok", []string{"board"}, []ServiceDeclaration{decl("kudos.board", 1)}, []ServiceRequirement{req("x.y", 2, "board")}, ""},
		{"bad provide name", nil, []ServiceDeclaration{decl("Kudos", 1)}, nil, "module 'm' provides invalid service ServiceDeclaration(name='Kudos', version=1)"},
		{"bad provide version", nil, []ServiceDeclaration{decl("k", 0)}, nil, "module 'm' provides invalid service ServiceDeclaration(name='k', version=0)"},
		{"trailing dot", nil, []ServiceDeclaration{decl("k.", 1)}, nil, "module 'm' provides invalid service ServiceDeclaration(name='k.', version=1)"},
		{"twice", nil, []ServiceDeclaration{decl("k", 1), decl("k", 1)}, nil, "module 'm' provides ('k', 1) twice"},
		{"two versions ok", nil, []ServiceDeclaration{decl("k", 1), decl("k", 2)}, nil, ""},
		{"bad consume", []string{"p"}, nil, []ServiceRequirement{req("k", 0, "p")}, "module 'm' consumes invalid service ServiceRequirement(name='k', version=0, provider='p')"},
		{"own", []string{"m"}, nil, []ServiceRequirement{req("k", 1, "m")}, "module 'm' cannot consume its own service"},
		{"no dependency", nil, nil, []ServiceRequirement{req("k", 1, "p")}, "module 'm' consumes 'k' from 'p' without depending on it"},
		{"consume twice", []string{"p"}, nil, []ServiceRequirement{req("k", 1, "p"), req("k", 1, "p")}, "module 'm' consumes k@1 twice"},
		{"multiple providers", []string{"p", "q"}, nil, []ServiceRequirement{req("k", 1, "p"), req("k", 1, "q")}, "module 'm' consumes k@1 from multiple providers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, ValidateServices("m", tt.deps, tt.provides, tt.consumes), tt.want)
		})
	}
	if !ValidServiceName("a.b_c.d") || ValidServiceName("a..b") {
		t.Error("ValidServiceName")
	}
}

type board struct{ n int }

type handle struct {
	v   any
	err error
}

func (h handle) Name() string        { return "kudos.board" }
func (h handle) Version() int        { return 1 }
func (h handle) Value() (any, error) { return h.v, h.err }

func TestServiceAs(t *testing.T) {
	b, err := ServiceAs[*board](handle{v: &board{3}})
	if err != nil || b.n != 3 {
		t.Fatalf("ServiceAs = %v, %v", b, err)
	}
	if _, err := ServiceAs[*board](handle{v: "nope"}); err == nil || err.Error() != "service kudos.board@1 is not a *sdk.board" {
		t.Fatalf("type mismatch error: %v", err)
	}
	closed := NewServiceClosed("kudos.board", 1, "reference_kudos")
	_, err = ServiceAs[*board](handle{err: closed})
	var su *ServiceUnavailable
	if !errors.As(err, &su) || su.Provider != "reference_kudos" || !errors.Is(err, ErrServiceUnavailable) {
		t.Fatalf("closed error: %v", err)
	}
	if err.Error() != "service kudos.board@1 closed with module 'reference_kudos'" {
		t.Fatalf("message %q", err)
	}
	if errors.Is(err, ErrContract) {
		t.Fatal("ServiceUnavailable must not be a contract error")
	}
	if got := NewServiceNotProvided("a", 2).Error(); got != "service a@2 is not provided" {
		t.Fatal(got)
	}
	checkErr(t, NewUndeclaredProvide("m", "a", 1), "module 'm' did not declare that it provides a@1")
	checkErr(t, NewUndeclaredConsume("m", "a", 1), "module 'm' did not declare that it consumes a@1")
	checkErr(t, NewServiceAlreadyProvided("a", 1, "p"), "service a@1 is already provided by 'p'")
}
