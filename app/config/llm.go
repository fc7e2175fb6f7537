package config

import (
	"net/url"
	"strings"
)

// resolveLLM resolves the model provider's overrides (KIMI_LLM_*).
func (r *resolver) resolveLLM(get func(key string) (string, string)) {
	if v, src := get(KeyLLMBaseURL); strings.TrimSpace(v) != "" {
		if msg := providerURLProblem(strings.TrimSpace(v)); msg != "" {
			r.fail(src, "%s", msg)
		} else {
			r.cfg.LLMBaseURL = strings.TrimRight(strings.TrimSpace(v), "/")
		}
	}
	if v, src := get(KeyLLMModel); strings.TrimSpace(v) != "" {
		v = strings.TrimSpace(v)
		switch {
		case len(v) > MaxLLMModelBytes:
			r.fail(src, "is longer than %d bytes", MaxLLMModelBytes)
		case strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
			r.fail(src, "must not contain spaces, control or non-ASCII characters (a model id such as the provider's /models lists)")
		default:
			r.cfg.LLMModel = v
		}
	}
	s, _ := lookup(KeyLLMAPIKey)
	if v, src, ok := r.secret(s); ok {
		r.cfg.Origins[s.Key] = src
		v = strings.TrimSpace(v)
		switch {
		case v == "":
		case strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
			r.fail(src, "must not contain spaces, control or non-ASCII characters (paste the API key alone)")
		default:
			r.cfg.LLMAPIKey = Secret(v)
		}
	}
}

// MaxLLMModelBytes bounds KIMI_LLM_MODEL.
const MaxLLMModelBytes = 256

// providerURLProblem checks a model provider's base URL: absolute http or
// https, a host, no credentials, query or fragment. The message never
// repeats the URL (it may hold credentials).
func providerURLProblem(v string) string {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "is not a URL (e.g. https://api.moonshot.ai/v1)"
	case u.User != nil:
		return "must not contain a user name or password (give the key in KIMI_LLM_API_KEY)"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must start with http:// or https:// (e.g. https://api.moonshot.ai/v1)"
	case u.Hostname() == "":
		return "has no host (e.g. https://api.moonshot.ai/v1)"
	case !validPort(u.Port()) || strings.HasSuffix(u.Host, ":"):
		return "has an invalid port (1-65535)"
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, "?#"):
		return "must not have a query or fragment"
	}
	return ""
}
