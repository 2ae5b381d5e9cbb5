package monitor

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// reportPath is where a balancer instance takes load reports.
const reportPath = "/v1/report"

// maxReportRedirects bounds the 307s one report follows.
const maxReportRedirects = 3

// adminRoute is where a monitor talks to the balancer: the admin URLs it
// was given, and the one it reports to now — an entry of the list, or an
// instance a 307 from /v1/report sent it to (the group's leader in a
// cluster). Pure; not safe for concurrent use (the Monitor guards it with
// routeMu).
type adminRoute struct {
	list    []string
	current string
}

func newAdminRoute(list []string) adminRoute {
	r := adminRoute{list: slices.Clone(list)}
	if len(list) > 0 {
		r.current = list[0]
	}
	return r
}

// order returns the admin URLs to try for one request, each once: the
// current one first, then the list in its order after it (wrapping
// around), or the whole list after it when the current one is a redirect
// target that is not in the list.
func (r adminRoute) order() []string {
	i := slices.Index(r.list, r.current)
	if i < 0 {
		if r.current == "" {
			return slices.Clone(r.list)
		}
		return append([]string{r.current}, r.list...)
	}
	return append(slices.Clone(r.list[i:]), r.list[:i]...)
}

// redirectBase returns the admin base URL a 307 from base+"/v1/report"
// points to: its Location, resolved against the request's URL, less the
// /v1/report path. A Location that is not an http(s) URL of /v1/report is
// an error.
func redirectBase(base, location string) (string, error) {
	if location == "" {
		return "", errors.New("redirect without a Location")
	}
	from, err := url.Parse(base + reportPath)
	if err != nil {
		return "", err
	}
	to, err := from.Parse(location)
	if err != nil {
		return "", fmt.Errorf("redirect to %q: %w", location, err)
	}
	if (to.Scheme != "http" && to.Scheme != "https") || to.Host == "" || !strings.HasSuffix(to.Path, reportPath) || to.RawQuery != "" || to.Fragment != "" {
		return "", fmt.Errorf("redirect to %q: not an http(s) URL of %s", location, reportPath)
	}
	to.Path = strings.TrimSuffix(to.Path, reportPath)
	to.RawPath = ""
	return strings.TrimRight(to.String(), "/"), nil
}

// tryElsewhere reports whether a request that failed with err is worth
// sending to the next admin URL: the instance was not reached or did not
// answer in time (any transport error), or it answered 5xx. A 4xx is the
// balancer's answer (a 401 is handled by registering again) and is not.
func tryElsewhere(err error) bool {
	if err == nil {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	var de *decodeError
	return !errors.As(err, &de)
}

// decodeError is an answer the monitor could not decode: the instance
// answered, so it is not a reason to try another.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }
