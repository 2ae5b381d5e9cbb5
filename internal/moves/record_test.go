package moves

import (
	"strings"
	"testing"
	"time"
)

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 9, 0, 0, 500, time.FixedZone("x", 3600))
	v, err := encode(Move{Client: "c1", To: "r2", Epoch: 3, PlannedAt: at}, 812)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"to":"r2","term":812,"epoch":3,"planned_at":"2026-11-27T08:00:00.0000005Z"}`; string(v) != want {
		t.Fatalf("encode = %s, want %s", v, want)
	}
	r, err := Decode("k", v)
	if err != nil {
		t.Fatal(err)
	}
	if r.To != "r2" || r.Term != 812 || r.Epoch != 3 || !r.PlannedAt.Equal(at) {
		t.Fatalf("Decode = %+v", r)
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	const ok = `"to":"r2","term":7,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"`
	tests := []struct {
		name, value, want string
	}{
		{"not json", `nope`, `value of /k: "nope" is not a JSON object`},
		{"array", `[1]`, `is not a JSON object`},
		{"to missing", `{"term":7,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "to": missing, want a non-empty string`},
		{"to empty", `{"to":"","term":7,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "to": invalid value "", want a non-empty string`},
		{"to number", `{"to":5,"term":7,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "to": invalid value 5`},
		{"term zero", `{"to":"r","term":0,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "term": invalid value 0, want a positive integer`},
		{"term negative", `{"to":"r","term":-3,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "term": invalid value -3`},
		{"term fraction", `{"to":"r","term":1.5,"epoch":1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "term": invalid value 1.5`},
		{"epoch null", `{"to":"r","term":1,"epoch":null,"planned_at":"2026-11-27T09:00:00Z"}`, `field "epoch": invalid value null, want a non-negative integer`},
		{"epoch negative", `{"to":"r","term":1,"epoch":-1,"planned_at":"2026-11-27T09:00:00Z"}`, `field "epoch": invalid value -1`},
		{"planned_at missing", `{"to":"r","term":1,"epoch":1}`, `field "planned_at": missing, want an RFC 3339 time`},
		{"planned_at garbage", `{"to":"r","term":1,"epoch":1,"planned_at":"soon"}`, `field "planned_at": invalid value "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode("/k", []byte(tt.value))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "/k") {
				t.Fatalf("Decode(%s) = %v, want an error naming the key and containing %q", tt.value, err, tt.want)
			}
		})
	}
	t.Run("unknown fields ignored", func(t *testing.T) {
		t.Parallel()
		if _, err := Decode("/k", []byte(`{`+ok+`,"later":true}`)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("long value clipped", func(t *testing.T) {
		t.Parallel()
		_, err := Decode("/k", []byte(strings.Repeat("x", 500)))
		if err == nil || len(err.Error()) > 300 {
			t.Fatalf("Decode of 500 bytes = %v, want a short error", err)
		}
	})
}
