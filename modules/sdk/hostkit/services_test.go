package hostkit

import (
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

type board struct{ n int }

type handle struct {
	v   any
	err error
}

func (h handle) Name() string        { return "kudos.board" }
func (h handle) Version() int        { return 1 }
func (h handle) Value() (any, error) { return h.v, h.err }

func TestServiceAs(t *testing.T) {
	b, err := sdk.ServiceAs[*board](handle{v: &board{3}})
	if err != nil || b.n != 3 {
		t.Fatalf("ServiceAs = %v, %v", b, err)
	}
	if _, err := sdk.ServiceAs[*board](handle{v: "nope"}); err == nil || err.Error() != "service kudos.board@1 is not a *hostkit.board" {
		t.Fatalf("type mismatch error: %v", err)
	}
	closed := NewServiceClosed("kudos.board", 1, "reference_kudos")
	_, err = sdk.ServiceAs[*board](handle{err: closed})
	var su *sdk.ServiceUnavailableError
	if !errors.As(err, &su) || su.Provider != "reference_kudos" || !errors.Is(err, sdk.ErrServiceUnavailable) {
		t.Fatalf("closed error: %v", err)
	}
	if err.Error() != "service kudos.board@1 closed with module 'reference_kudos'" {
		t.Fatalf("message %q", err)
	}
	if errors.Is(err, sdk.ErrContract) {
		t.Fatal("ServiceUnavailableError must not be a contract error")
	}
	if got := NewServiceNotProvided("a", 2).Error(); got != "service a@2 is not provided" {
		t.Fatal(got)
	}
	checkErr(t, NewUndeclaredProvide("m", "a", 1), "module 'm' did not declare that it provides a@1")
	checkErr(t, NewUndeclaredConsume("m", "a", 1), "module 'm' did not declare that it consumes a@1")
	checkErr(t, NewServiceAlreadyProvided("a", 1, "p"), "service a@1 is already provided by 'p'")
}
