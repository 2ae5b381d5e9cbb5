package httpagent

import (
	"strings"
	"testing"
)

const realPage = `Active connections: 291 
server accepts handled requests
 16630948 16630948 31070465 
Reading: 6 Writing: 179 Waiting: 106 
`

func TestParseStubStatus(t *testing.T) {
	got, err := ParseStubStatus([]byte(realPage))
	if err != nil {
		t.Fatal(err)
	}
	want := StubStatus{Active: 291, Accepts: 16630948, Handled: 16630948, Requests: 31070465, Reading: 6, Writing: 179, Waiting: 106}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got.InProgress() != 185 {
		t.Errorf("in progress %d, want 185", got.InProgress())
	}
}

func TestParseStubStatusRejects(t *testing.T) {
	for _, tc := range []struct{ name, page, want string }{
		{"empty", "", "lines"},
		{"html", "<html>\n<body>\nnot found\n</body>\n</html>", "Active connections"},
		{"two counters", "Active connections: 1\nserver accepts handled requests\n 1 2\nReading: 0 Writing: 1 Waiting: 0\n", "three counters"},
		{"negative", "Active connections: -1\nserver accepts handled requests\n 1 2 3\nReading: 0 Writing: 1 Waiting: 0\n", "not a count"},
		{"word", "Active connections: 1\nserver accepts handled requests\n 1 x 3\nReading: 0 Writing: 1 Waiting: 0\n", "counter 2"},
		{"states", "Active connections: 1\nserver accepts handled requests\n 1 2 3\nReading: 0 Writing: 1\n", "Reading: N"},
	} {
		_, err := ParseStubStatus([]byte(tc.page))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParseStubStatus(f *testing.F) {
	f.Add([]byte(realPage))
	f.Add([]byte("Active connections: 1\n\n1 1 1\nReading: 0 Writing: 1 Waiting: 0"))
	f.Fuzz(func(t *testing.T, page []byte) {
		s, err := ParseStubStatus(page)
		if err != nil {
			return
		}
		for _, v := range []int64{s.Active, s.Accepts, s.Handled, s.Requests, s.Reading, s.Writing, s.Waiting} {
			if v < 0 {
				t.Fatalf("negative count in %+v from %q", s, page)
			}
		}
	})
}
