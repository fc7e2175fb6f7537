package sdk

import "testing"

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
			checkErr(t, validateServices("m", tt.deps, tt.provides, tt.consumes), tt.want)
		})
	}
	if !serviceNameRE.MatchString("a.b_c.d") || serviceNameRE.MatchString("a..b") {
		t.Error("ValidServiceName")
	}
}
