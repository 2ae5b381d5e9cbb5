package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestValidateAffinity(t *testing.T) {
	t.Parallel()
	rule := []protocol.AffinityRule{{Kind: protocol.AffinitySingleton, Match: "/a/{x}"}}
	tests := []struct {
		name            string
		proto, binding  string
		rules           []protocol.AffinityRule
		field, contains string // "" field: valid
	}{
		{"per-request http", protocol.ProtocolHTTP, protocol.PerRequest, rule, "", ""},
		{"no rules anywhere", protocol.ProtocolGIOP, protocol.OnDemand, nil, "", ""},
		{"on-demand http", protocol.ProtocolHTTP, protocol.OnDemand, rule, "affinity", "binding is on-demand"},
		{"replicated http", protocol.ProtocolHTTP, protocol.BindingReplicated, rule, "affinity", "binding is replicated"},
		{"giop", protocol.ProtocolGIOP, protocol.PerRequest, rule, "affinity", "protocol is giop"},
		{"tcp with a match", protocol.ProtocolTCP, protocol.PerRequest, rule, "affinity[0].match", "tcp group"},
		{"tcp", protocol.ProtocolTCP, protocol.PerRequest, []protocol.AffinityRule{{Kind: protocol.AffinityClientActivated}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := validateAffinity(protocol.Group{Protocol: tt.proto, Binding: tt.binding, Affinity: tt.rules})
			if tt.field == "" {
				if err != nil {
					t.Fatalf("validateAffinity: %v, want nil", err)
				}
				return
			}
			var fe *protocol.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("validateAffinity: %v, want field %s saying %q", err, tt.field, tt.contains)
			}
		})
	}
}
