package client

import (
	"net/http"
	"testing"
)

// TestDefaultBaseIsOwnPool: without Options.Base each Transport sends
// through a clone of http.DefaultTransport of its own, so that its
// CloseIdleConnections cannot break calls made through the shared one or
// through another Transport (what made TestConcurrentCallsRunExactlyOnce
// fail: "transport connection broken: http: CloseIdleConnections called").
func TestDefaultBaseIsOwnPool(t *testing.T) {
	a, b := NewTransport(Options{}), NewTransport(Options{})
	ab, ok := a.base.(*http.Transport)
	if !ok {
		t.Fatalf("default base is %T, want *http.Transport", a.base)
	}
	if a.base == http.DefaultTransport || a.base == b.base {
		t.Fatal("default base is shared: CloseIdleConnections would close other code's connections")
	}
	def := http.DefaultTransport.(*http.Transport)
	if ab.MaxIdleConns != def.MaxIdleConns || ab.IdleConnTimeout != def.IdleConnTimeout || ab.ForceAttemptHTTP2 != def.ForceAttemptHTTP2 || ab.Proxy == nil {
		t.Error("default base does not carry http.DefaultTransport's settings")
	}
	own := &http.Transport{}
	if c := NewTransport(Options{Base: own}); c.base != own {
		t.Error("Options.Base was not used as given")
	}
}
