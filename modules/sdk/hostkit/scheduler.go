package hostkit

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ValidateJobKey checks 1..128 characters ("invalid job key").
func ValidateJobKey(key string) error {
	if n := utf8.RuneCountInString(key); n < 1 || n > sdk.MaxJobKeyLength {
		return contractErrorf("invalid job key %s", pyRepr(key))
	}
	return nil
}

// ValidateHandlerName checks 1..64 characters ("invalid handler name").
func ValidateHandlerName(name string) error {
	if n := utf8.RuneCountInString(name); n < 1 || n > sdk.MaxHandlerNameLength {
		return contractErrorf("invalid handler name %s", pyRepr(name))
	}
	return nil
}

// ValidateInterval checks a periodic interval is positive.
func ValidateInterval(interval time.Duration) error {
	if interval <= 0 {
		return contractErrorf("interval_seconds must be positive")
	}
	return nil
}

// EncodeJobPayload marshals a job payload: nil becomes "{}"; anything else
// must marshal to a JSON object.
func EncodeJobPayload(payload any) (json.RawMessage, error) {
	if payload == nil {
		return json.RawMessage("{}"), nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, &sdk.ModuleContractError{Message: "job payload must be JSON-serializable: " + err.Error(), Err: err}
	}
	if len(raw) == 0 || raw[0] != '{' {
		if string(raw) == "null" {
			return json.RawMessage("{}"), nil
		}
		return nil, contractErrorf("job payload must be a JSON object")
	}
	return raw, nil
}
