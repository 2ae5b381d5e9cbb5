package failpointbuild

import (
	"strings"
	"testing"
)

func TestParseMarkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		want    []Marker // File is always "f.go"
		wantErr string   // a substring of the error, "" for none
	}{
		{
			name: "kill",
			src:  "package p\n\nfunc f() {\n\t// gofail: var fpA struct{}\n\t// failpoint.Kill()\n\tg()\n}\n",
			want: []Marker{{Name: "fpA", File: "f.go", Line: 4, Kill: true}},
		},
		{
			name: "without code, then a blank line",
			src:  "package p\n\nfunc f() {\n\t// gofail: var fpB struct{}\n\n\tg()\n}\n",
			want: []Marker{{Name: "fpB", File: "f.go", Line: 4}},
		},
		{
			name: "two, and an ordinary comment mentioning gofail: elsewhere",
			src:  "package p\n\n// see gofail: docs\nfunc f() {\n\t// gofail: var fpC struct{}\n\t// failpoint.Kill()\n\tg()\n\t// gofail: var fpD struct{}\n\t// failpoint.Kill()\n\th()\n}\n",
			want: []Marker{{Name: "fpC", File: "f.go", Line: 5, Kill: true}, {Name: "fpD", File: "f.go", Line: 8, Kill: true}},
		},
		{
			name:    "a type other than struct{}",
			src:     "package p\n\nfunc f() {\n\t// gofail: var fpE string\n\tg()\n}\n",
			wantErr: `f.go:4: malformed failpoint marker "// gofail: var fpE string"`,
		},
		{
			name:    "not an identifier",
			src:     "package p\n\nfunc f() {\n\t// gofail: var fp-E struct{}\n\tg()\n}\n",
			wantErr: "f.go:4: malformed failpoint marker",
		},
		{
			name:    "a gofail label",
			src:     "package p\n\nfunc f() {\n\t// gofail: here:\n\tg()\n}\n",
			wantErr: "f.go:4: malformed failpoint marker",
		},
		{
			name:    "an ordinary comment right after the marker",
			src:     "package p\n\nfunc f() {\n\t// gofail: var fpF struct{}\n\t// dies here\n\tg()\n}\n",
			wantErr: `f.go:5: failpoint fpF: comment line "// dies here" after the marker`,
		},
		{
			name:    "a comment after the kill line",
			src:     "package p\n\nfunc f() {\n\t// gofail: var fpG struct{}\n\t// failpoint.Kill()\n\t// then g\n\tg()\n}\n",
			wantErr: `f.go:6: failpoint fpG: comment line "// then g"`,
		},
		{
			name:    "at the end of the file",
			src:     "package p\n\n// gofail: var fpH struct{}\n// failpoint.Kill()",
			wantErr: "f.go:3: failpoint fpH ends the file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseMarkers("f.go", []byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseMarkers error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseMarkers: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parseMarkers = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("marker %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestCheckUnique(t *testing.T) {
	t.Parallel()
	ms := []Marker{{Name: "a", File: "x.go", Line: 3}, {Name: "b", File: "y.go", Line: 4}}
	if err := checkUnique(ms); err != nil {
		t.Fatalf("checkUnique(distinct names) = %v", err)
	}
	err := checkUnique(append(ms, Marker{Name: "a", File: "z.go", Line: 9}))
	if err == nil || !strings.Contains(err.Error(), "failpoint name a used twice, at x.go:3 and z.go:9") {
		t.Fatalf("checkUnique(a twice) = %v, want an error naming both places", err)
	}
}
