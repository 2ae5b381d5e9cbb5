package config

import (
	"errors"
	"strings"
	"testing"
)

// instance.peer_ca parses as a path; a path that cannot be one is refused
// naming the key.
func TestParsePeerCA(t *testing.T) {
	t.Parallel()
	f, err := Parse("fulcrum.yaml", []byte("instance: {name: fulcrum-a, peer_ca: /etc/fulcrum/peers-ca.pem}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Instance.PeerCA != "/etc/fulcrum/peers-ca.pem" {
		t.Errorf("instance.peer_ca = %q", f.Instance.PeerCA)
	}
	for _, in := range []string{"instance:\n  peer_ca: \"ca\\u0007.pem\"\n", "instance:\n  peer_ca: '  '\n", "instance:\n  peer_ca: " + strings.Repeat("a", 4097) + "\n"} {
		_, err := Parse("fulcrum.yaml", []byte(in))
		var es Errors
		if !errors.As(err, &es) || len(es.Lines()) != 1 || !strings.HasPrefix(es.Lines()[0], "fulcrum.yaml:2: instance.peer_ca: invalid value") ||
			!strings.Contains(es.Lines()[0], "must be a file path") {
			t.Errorf("Parse(%.40q) = %v, want one error naming instance.peer_ca on line 2", in, err)
		}
	}
}
