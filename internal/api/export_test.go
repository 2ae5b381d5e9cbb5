package api

// Routes lists the served routes as "METHOD /path" (for the OpenAPI test).
func Routes() []string {
	out := make([]string, 0, len(routes))
	for _, r := range routes {
		out = append(out, r.method+" "+r.path)
	}
	return out
}

// QueueWaitHistogram is queueWaitHistogram under a name of its own.
var QueueWaitHistogram = queueWaitHistogram
