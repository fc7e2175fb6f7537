package hostkit

import (
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
)

// NewUndeclaredProvide builds "module 'm' did not declare that it provides n@v".
func NewUndeclaredProvide(module, name string, version int) *sdk.ModuleContractError {
	return contractErrorf("module %s did not declare that it provides %s@%d", pyRepr(module), name, version)
}

// NewUndeclaredConsume builds "module 'm' did not declare that it consumes n@v".
func NewUndeclaredConsume(module, name string, version int) *sdk.ModuleContractError {
	return contractErrorf("module %s did not declare that it consumes %s@%d", pyRepr(module), name, version)
}

// NewServiceAlreadyProvided builds "service n@v is already provided by 'p'".
func NewServiceAlreadyProvided(name string, version int, provider string) *sdk.ModuleContractError {
	return contractErrorf("service %s@%d is already provided by %s", name, version, pyRepr(provider))
}

// NewServiceNotProvided builds "service n@v is not provided".
func NewServiceNotProvided(name string, version int) *sdk.ServiceUnavailableError {
	return &sdk.ServiceUnavailableError{Name: name, Version: version,
		Message: fmt.Sprintf("service %s@%d is not provided", name, version)}
}

// NewServiceClosed builds "service n@v closed with module 'p'".
func NewServiceClosed(name string, version int, provider string) *sdk.ServiceUnavailableError {
	return &sdk.ServiceUnavailableError{Name: name, Version: version, Provider: provider,
		Message: fmt.Sprintf("service %s@%d closed with module %s", name, version, pyRepr(provider))}
}
