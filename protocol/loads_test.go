package protocol

import (
	"errors"
	"testing"
)

func TestLoadViewValidate(t *testing.T) {
	t.Parallel()
	age := int64(-1)
	ok := LoadView{Group: "prime", Term: 7, Leader: "a", Replicas: []ReplicaLoad{{ID: "r-1", Reported: true, Load: 2, Advisory: High, Shed: 1.5, Epoch: 3}, {ID: "r-2"}},
		Moves: []PlannedMove{{Client: "c1", From: "r-1", To: "r-2", Rate: 10}}, Completed: []CompletedMove{{Client: "c0", Replica: "r-2", Instance: "b"}}}
	for _, tc := range []struct {
		name  string
		edit  func(*LoadView)
		field string
	}{
		{"valid", func(*LoadView) {}, ""},
		{"no group", func(v *LoadView) { v.Group = "" }, "group"},
		{"term 0", func(v *LoadView) { v.Term = 0 }, "term"},
		{"no leader", func(v *LoadView) { v.Leader = "" }, "leader"},
		{"no id", func(v *LoadView) { v.Replicas[1].ID = "" }, "replicas[1].id"},
		{"duplicate id", func(v *LoadView) { v.Replicas[1].ID = "r-1" }, "replicas[1].id"},
		{"negative load", func(v *LoadView) { v.Replicas[0].Load = -1 }, "replicas[0].load"},
		{"negative sample", func(v *LoadView) { v.Replicas[0].Sample = -1 }, "replicas[0].sample"},
		{"negative clients", func(v *LoadView) { v.Replicas[0].Clients = -2 }, "replicas[0].clients"},
		{"negative age", func(v *LoadView) { v.Replicas[0].ReportAgeMS = &age }, "replicas[0].report_age_ms"},
		{"too many", func(v *LoadView) { v.Replicas = make([]ReplicaLoad, MaxLoadViewReplicas+1) }, "replicas"},
		{"unknown advisory", func(v *LoadView) { v.Replicas[0].Advisory = "panic" }, "replicas[0].advisory"},
		{"negative shed", func(v *LoadView) { v.Replicas[0].Shed = -1 }, "replicas[0].shed"},
		{"move without client", func(v *LoadView) { v.Moves[0].Client = "" }, "moves[0].client"},
		{"move without target", func(v *LoadView) { v.Moves[0].To = "" }, "moves[0].to"},
		{"negative move rate", func(v *LoadView) { v.Moves[0].Rate = -1 }, "moves[0].rate"},
		{"too many moves", func(v *LoadView) { v.Moves = make([]PlannedMove, MaxLoadViewMoves+1) }, "moves"},
		{"completed without client", func(v *LoadView) { v.Completed[0].Client = "" }, "completed[0].client"},
		{"completed without replica", func(v *LoadView) { v.Completed[0].Replica = "" }, "completed[0].replica"},
		{"too many completed", func(v *LoadView) { v.Completed = make([]CompletedMove, MaxLoadViewMoves+1) }, "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := ok
			v.Replicas = append([]ReplicaLoad(nil), ok.Replicas...)
			v.Moves = append([]PlannedMove(nil), ok.Moves...)
			v.Completed = append([]CompletedMove(nil), ok.Completed...)
			tc.edit(&v)
			err := v.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("valid view refused: %v", err)
			case tc.field == "":
			case !errors.As(err, &fe) || fe.Field != tc.field:
				t.Fatalf("error %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}
