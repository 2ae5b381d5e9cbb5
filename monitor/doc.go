// Package monitor is fulcrum's load monitor for Go HTTP replicas: net/http
// middleware that measures a replica's load, reports it to the balancer and
// obeys the balancer's advisories (DESIGN.md "HTTP binding protocol").
//
// # What it measures
//
// Per call, with atomics and one sharded lock: calls in flight, the call
// rate, the mean latency (folded into an EWMA once per report window) and,
// for calls of bound clients (those carrying Fulcrum-Binding), each
// client's call rate keyed by its Fulcrum-Client id. Once per window it
// reads the process's CPU time as a share (0–1) of the cores it may use.
// A report carries the load (Options.Load: the call rate by default, or
// calls in flight, CPU, latency, or Options.LoadFunc), the metrics
// inflight, rps, latency_ms and cpu, and the busiest bound clients with
// their rates.
//
// # Load probes
//
// The middleware answers GET protocol.ProbePath (/fulcrum/probe) with
// {"rif": N, "latency_ms": x}: the calls in flight and the median latency
// of the last 64 calls that started with about as many calls in flight
// (the same power-of-two bucket; all of them when fewer than four did).
// The prequal strategy probes it; probes are not calls and are not
// counted. An agent that answers probes itself can use LoadProbe.
//
// # How it reports
//
// In push mode (the default) it POSTs a report to {Admin}/v1/report every
// interval, with the replica token, and applies the advisory it gets back.
// The balancer's report_interval is authoritative and adopted from every
// answer. In pull mode the balancer GETs Options.PullURL, passing the
// current advisory in the Fulcrum-Advisory header, and the middleware (or
// PullHandler) answers the report.
//
// Start registers the replica with "replace": true, so a restarted process
// takes over its old registration; while the balancer is unreachable it
// retries with backoff in the background, and the replica serves meanwhile.
// If the balancer later rejects the token (401), the monitor registers
// again. Close deregisters.
//
// With several admin URLs (Options.Admins: a cluster's instances) it
// reports to one and moves to the next when it cannot be reached, does not
// answer in time or answers 5xx; it follows a 307 from /v1/report itself,
// re-sending the report with its token, and stays there until that fails.
// Advisories carry a term (0 on a single node): one whose term is below the
// highest seen since the monitor last registered is ignored.
//
// # What it obeys
//
// Under a high advisory the middleware answers each client the advisory
// names — or, when it names none, the busiest bound clients whose rates add
// up to the shed amount — once per advisory (term, epoch) with 307 Temporary Redirect to the
// front door (same path and query) and Fulcrum-Rebind: 1, instead of running
// the call; the client goes back through the front door and is bound
// afresh. Under drain every call of a bound client is sent back. Calls
// without Fulcrum-Binding are never redirected: plain clients are not bound
// and come through the front door anyway.
//
// # Example
//
//	mon, err := monitor.New(monitor.Options{
//		Admin:     "http://127.0.0.1:7070",
//		Group:     "prime",
//		Address:   "http://127.0.0.1:9001",
//		JoinToken: os.Getenv("FULCRUM_JOIN_TOKEN"),
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	srv := &http.Server{Addr: "127.0.0.1:9001", Handler: mon.Handler(mux)}
//	ln, err := net.Listen("tcp", srv.Addr)
//	if err != nil {
//		log.Fatal(err)
//	}
//	if err := mon.Start(); err != nil { // registers in the background
//		log.Fatal(err)
//	}
//	go srv.Serve(ln)
//	<-ctx.Done()
//	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//	defer cancel()
//	_ = mon.Close(shutdown) // deregister first: no new bindings
//	_ = srv.Shutdown(shutdown)
package monitor
