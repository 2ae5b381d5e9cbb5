package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/protocol"
)

func TestValidateWorkflow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		parallel int
		proto    string
		want     string // "" valid
	}{
		{"unset", 0, protocol.ProtocolHTTP, ""},
		{"one", 1, protocol.ProtocolHTTP, ""},
		{"most", protocol.MaxWorkflowParallel, protocol.ProtocolHTTP, ""},
		{"negative", -1, protocol.ProtocolHTTP, "must be in [1,1024] (default 2)"},
		{"too many", protocol.MaxWorkflowParallel + 1, protocol.ProtocolHTTP, "must be in [1,1024] (default 2)"},
		{"giop", 2, protocol.ProtocolGIOP, "only allowed with protocol http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := validGroup()
			if tt.proto != protocol.ProtocolHTTP {
				g.Protocol, g.Replicas = tt.proto, nil
			}
			g.Workflow.Parallel = tt.parallel
			err := Validate(WithDefaults(g))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *protocol.FieldError
			if !errors.As(err, &fe) || fe.Field != "workflow.parallel" || !strings.Contains(fe.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want workflow.parallel mentioning %q", err, tt.want)
			}
		})
	}
}

func TestWorkflowParallelDefault(t *testing.T) {
	t.Parallel()
	if k := WorkflowParallel(protocol.Group{}); k != protocol.DefaultWorkflowParallel {
		t.Fatalf("WorkflowParallel(unset) = %d, want %d", k, protocol.DefaultWorkflowParallel)
	}
	if k := WorkflowParallel(protocol.Group{Workflow: protocol.WorkflowSettings{Parallel: 7}}); k != 7 {
		t.Fatalf("WorkflowParallel(7) = %d, want 7", k)
	}
}
