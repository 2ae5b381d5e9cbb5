package httpdoor

import "testing"

// engines are the HTTP/1 engines the proxy behaviour table runs against.
var engines = []string{EngineLean, EngineStdlib}

// proxyBehaviour is the proxy behaviour table: each case starts its own
// front door on the engine it is given and must hold on every engine.
var proxyBehaviour = []struct {
	name string
	run  func(t *testing.T, engine string)
}{
	{"KeepAlive", testProxyKeepAlive},
	{"ForwardedHeaders", testProxyForwardedHeaders},
	{"H2CInbound", testProxyH2CInbound},
	{"GRPCStreaming", testProxyGRPCStreaming},
	{"WebSocket", testProxyWebSocket},
	{"NoReplica", testProxyNoReplica},
	{"DialFailureRetried", testProxyDialFailureRetried},
	{"DialFailureRetriedOnPooledConnection", testProxyDialFailureRetriedOnPooledConnection},
	{"AllDialsFail", testProxyAllDialsFail},
	{"NoReplay", testProxyNoReplay},
	{"RetrySetting", testProxyRetrySetting},
	{"ViaHopGuard", testProxyViaHopGuard},
	{"SlowClientsAreNotReplicaFailures", testProxySlowClientsAreNotReplicaFailures},
	{"InflightLimit", testProxyInflightLimit},
	{"Observer", testProxyObserver},
	{"CallTimeout", testProxyCallTimeout},
	{"ClientGone", testProxyClientGone},
	{"QueueServesWaitingCallsByCost", testProxyQueueServesWaitingCallsByCost},
	{"QueueTimeoutAndFull", testProxyQueueTimeoutAndFull},
	{"QueueClientHangsUp", testProxyQueueClientHangsUp},
	{"Pipelining", testLeanPipelining},
	{"Chunked", testLeanChunked},
	{"CloseDelimitedAnswer", testLeanCloseDelimitedAnswer},
	{"HandOver", testLeanHandOver},
	{"ClientGoneFreesInflight", testLeanClientGoneFreesInflight},
	{"HopByHop", testLeanHopByHop},
	{"AccessLog", testLeanAccessLog},
	{"AccessLogJSON", testAccessLogJSON},
	{"EventStream", testLeanEventStream},
	{"EarlyAnswer", testLeanEarlyAnswer},
	{"GracefulShutdown", testGracefulShutdown},
	{"ShutdownBounded", testShutdownBounded},
	{"StalledClients", testStalledClients},
	{"BadInput", testBadInput},
	{"PicksSeeTheCallsCost", testPicksSeeTheCallsCost},
	{"FramingOnNetHTTP", testFramingOnNetHTTP},
	{"HTTPSMember", testProxyHTTPSMember},
}

// TestProxyBehaviour runs the proxy behaviour table against every engine.
func TestProxyBehaviour(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		for _, tc := range proxyBehaviour {
			t.Run(engine+"/"+tc.name, func(t *testing.T) { tc.run(t, engine) })
		}
	}
}

// checkHandedOver checks how many connections the lean engine handed to
// net/http: want on the lean engine, none on stdlib (which serves every
// connection itself).
func checkHandedOver(t *testing.T, fd *frontDoor, engine string, want int64) {
	t.Helper()
	if engine == EngineStdlib {
		want = 0
	}
	if n := fd.handedOver.Load(); n != want {
		t.Errorf("%d connections handed over to net/http, want %d (engine %s)", n, want, engine)
	}
}
