package cli

import (
	"fmt"
	"strings"
)

// registerUsage is the --register flag's help, shared by the commands that
// join a group.
const registerUsage = "admin API URL of the balancer to register with; several, comma-separated, for the instances of a cluster (tried in order)"

// registerURLs splits a --register value into its admin URLs
// (comma-separated, spaces around each ignored) and checks each is an
// absolute http(s) URL without query or fragment. The error names the bad
// URL and its place in the list. An empty value is no URL.
func registerURLs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	urls := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		where := ""
		if len(parts) > 1 {
			where = fmt.Sprintf(" (URL %d of %d)", i+1, len(parts))
		}
		if p == "" {
			return nil, fmt.Errorf("--register %q: URL %d of %d is empty; give admin URLs separated by single commas", s, i+1, len(parts))
		}
		if absoluteHTTP(p) != nil {
			return nil, fmt.Errorf("--register: %q%s: must be an absolute http:// or https:// URL, such as http://10.0.0.1:7070", p, where)
		}
		if strings.ContainsAny(p, "?#") {
			return nil, fmt.Errorf("--register: %q%s: must have no query or fragment", p, where)
		}
		urls = append(urls, p)
	}
	return urls, nil
}

// checkedRegisterURLs is registerURLs for a value the command has already
// checked (an error there gives no URL, and monitor.New says what is
// missing).
func checkedRegisterURLs(s string) []string {
	urls, _ := registerURLs(s)
	return urls
}
