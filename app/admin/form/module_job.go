package form

import "net/http"

// ModuleJobKey is the hidden field of a job's "Run now" and "Cancel" forms
// (POST /modules/{name}/jobs/{key}/run and …/cancel): the job key exactly,
// beside its path-escaped copy in the address. The handler acts only when
// the two agree, so a proxy that decodes %2F on the way and reroutes the
// request cannot make it act on another job.
const ModuleJobKey = "job"

// Messages of the job forms.
const (
	MsgModuleJobKey      = "Choose a job: reload the module page and press the button again."
	MsgModuleJobMismatch = "The job in the form is not the one in the address: reload the module page and try again."
)

// ModuleJobRun is a job's "Run now" form.
type ModuleJobRun struct{ jobForm }

// ModuleJobCancel is a job's "Cancel" form (after a confirmation).
type ModuleJobCancel struct{ jobForm }

type jobForm struct {
	// Key is the job key the form names; PathKey the one of the address.
	Key, PathKey string
}

// ParseModuleJobRun reads the run-now form; pathKey is the decoded key of
// the address.
func ParseModuleJobRun(r *http.Request, pathKey string) ModuleJobRun {
	return ModuleJobRun{jobForm{Key: value(r, ModuleJobKey), PathKey: pathKey}}
}

// ParseModuleJobCancel reads the cancel form; pathKey is the decoded key
// of the address.
func ParseModuleJobCancel(r *http.Request, pathKey string) ModuleJobCancel {
	return ModuleJobCancel{jobForm{Key: value(r, ModuleJobKey), PathKey: pathKey}}
}

// Validate refuses a form without a key or whose key is not the address's.
func (f jobForm) Validate() Errors {
	var e Errors
	switch {
	case f.Key == "":
		e.Add(FieldForm, MsgModuleJobKey)
	case f.Key != f.PathKey:
		e.Add(FieldForm, MsgModuleJobMismatch)
	}
	return e
}
