package hostkit

import (
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// checkErr asserts err is nil when want is "", else that it is a contract
// error with exactly message want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want error %q, got nil", want)
	}
	if err.Error() != want {
		t.Fatalf("error mismatch\n got: %s\nwant: %s", err.Error(), want)
	}
	if !errors.Is(err, sdk.ErrContract) {
		t.Fatalf("error %q does not match ErrContract", err)
	}
	var mce *sdk.ModuleContractError
	if !errors.As(err, &mce) {
		t.Fatalf("error %q is not a *ModuleContractError", err)
	}
}
