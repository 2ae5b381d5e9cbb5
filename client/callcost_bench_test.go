package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// benchServers are a replica answering like the prime service and a front
// door binding every client to it.
func benchServers(b *testing.B) (replica, door *httptest.Server) {
	replica = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"n":1009,"prime":true,"served_by":"r-1"}`+"\n")
	}))
	door = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", replica.URL+r.URL.Path)
		w.Header().Set(protocol.HeaderGroup, "g")
		w.Header().Set(protocol.HeaderReplica, "r-1")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	b.Cleanup(replica.Close)
	b.Cleanup(door.Close)
	return replica, door
}

// runCalls makes b.N calls of url with hc, reading each answer.
func runCalls(b *testing.B, hc *http.Client, url string) {
	b.ReportAllocs()
	for b.Loop() {
		resp, err := hc.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkCallCost compares a call over loopback through net/http's
// Transport (plain) with a bound call through the client library (bound),
// each without a timeout, with http.Client.Timeout (client-timeout) and,
// bound, with Options.Timeout (options-timeout): what the library costs a
// call, and what each way of bounding a call costs.
//
//	go test -run XXX -bench CallCost -benchtime 20000x ./client/
func BenchmarkCallCost(b *testing.B) {
	replica, door := benchServers(b)
	for _, c := range []struct {
		name                       string
		bound                      bool
		clientTimeout, optsTimeout time.Duration
	}{
		{"plain", false, 0, 0},
		{"plain/client-timeout", false, time.Minute, 0},
		{"bound", true, 0, 0},
		{"bound/client-timeout", true, time.Minute, 0},
		{"bound/options-timeout", true, 0, time.Minute},
	} {
		b.Run(c.name, func(b *testing.B) {
			base := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
			defer base.CloseIdleConnections()
			var rt http.RoundTripper = base
			url := replica.URL + "/prime/1009"
			if c.bound {
				rt = client.NewTransport(client.Options{Base: base, Timeout: c.optsTimeout})
				url = door.URL + "/prime/1009"
			}
			hc := &http.Client{Transport: rt, Timeout: c.clientTimeout}
			runCalls(b, hc, url)
		})
	}
}
