package bridge

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/certs"
	"github.com/fulcrum-lb/fulcrum/internal/frontdoor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// newTransport is the transport of read-only calls: HTTP/1.1 to the
// replicas' registered addresses (their agents), never through an
// environment proxy, dialled with dial (a net.Dialer's when nil) within
// the call's connect timeout, over TLS with rtls's client for https://
// replicas when rtls is not nil.
func newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), rtls func() *certs.Client) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	bounded := func(ctx context.Context, network, addr string) (net.Conn, error) {
		connect := frontdoor.TimeoutsOf(protocol.Timeouts{}).Connect
		if c := roCallOf(ctx); c != nil {
			connect = c.to.Connect
		}
		ctx, cancel := context.WithTimeout(ctx, connect)
		defer cancel()
		return dial(ctx, network, addr)
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           bounded,
		Protocols:             p,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       frontdoor.TimeoutsOf(protocol.Timeouts{}).Idle,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Bodies pass through as the replica encoded them.
		DisableCompression: true,
	}
	if rtls != nil {
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return rtls().DialTLS(bounded, "http/1.1")(ctx, network, addr)
		}
	}
	return t
}
