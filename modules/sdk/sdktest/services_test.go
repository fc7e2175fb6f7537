package sdktest

import (
	"errors"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

type greeter struct{ name string }

func TestServicesHandlesDieWithTheirProvider(t *testing.T) {
	s := NewFakeServices()
	provider := s.For("prov", []sdk.ServiceDeclaration{{Name: "greet", Version: 1}}, nil)
	consumer := s.For("cons", nil, []sdk.ServiceRequirement{{Name: "greet", Version: 1, Provider: "prov"}})

	if _, err := consumer.Get("greet", 1); err == nil || err.Error() != "service greet@1 is not provided" || !errors.Is(err, sdk.ErrServiceUnavailable) {
		t.Errorf("get before provide = %v", err)
	}
	reg, err := provider.Provide("greet", 1, &greeter{"first"})
	if err != nil {
		t.Fatal(err)
	}
	handle, err := consumer.Get("greet", 1)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := sdk.ServiceAs[*greeter](handle); err != nil || g.name != "first" || handle.Name() != "greet" || handle.Version() != 1 {
		t.Errorf("value = %+v, %v", g, err)
	}
	if _, err := sdk.ServiceAs[string](handle); err == nil {
		t.Error("ServiceAs with the wrong type succeeded")
	}

	reg.Close()
	_, err = handle.Value()
	var unavailable *sdk.ServiceUnavailableError
	if !errors.As(err, &unavailable) || err.Error() != "service greet@1 closed with module 'prov'" {
		t.Errorf("value after close = %v", err)
	}
	// Provided again: a new object; the old handle stays dead.
	if _, err := provider.Provide("greet", 1, &greeter{"second"}); err != nil {
		t.Fatal(err)
	}
	if _, err := handle.Value(); err == nil {
		t.Error("a handle from a closed provision came back to life")
	}
	fresh, _ := consumer.Get("greet", 1)
	if g, _ := sdk.ServiceAs[*greeter](fresh); g == nil || g.name != "second" {
		t.Errorf("fresh handle = %+v", g)
	}
}

func TestServicesSingleLiveProviderAndDeclarations(t *testing.T) {
	s := NewFakeServices()
	a := s.For("a", []sdk.ServiceDeclaration{{Name: "svc", Version: 1}}, nil)
	b := s.For("b", []sdk.ServiceDeclaration{{Name: "svc", Version: 1}}, nil)
	if _, err := a.Provide("svc", 1, 1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"second provider", second(b.Provide("svc", 1, 2)), "service svc@1 is already provided by 'a'"},
		{"test provider too", second(s.Provide("svc", 1, 3)), "service svc@1 is already provided by 'a'"},
		{"undeclared provide", second(a.Provide("svc", 2, 1)), "module 'a' did not declare that it provides svc@2"},
		{"undeclared consume", second(a.Get("svc", 1)), "module 'a' did not declare that it consumes svc@1"},
		{"invalid name", second(s.Provide("Bad Name", 1, 1)), "invalid service 'Bad Name' version 1"},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, tt.err, tt.want)
		}
	}
	if _, err := s.Provide("other", 2, "x"); err != nil {
		t.Fatal(err)
	}
	if got := s.Provided(); !slices.Equal(got, []ServiceKey{{"other", 2}, {"svc", 1}}) {
		t.Errorf("provided = %v", got)
	}
	if h, err := s.Get("other", 2); err != nil || h.Name() != "other" {
		t.Errorf("unbound get = %v", err)
	}
}
