package cli

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRegisterURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string // a part of the error; "" for none
	}{
		{name: "none", in: "", want: nil},
		{name: "one", in: "http://10.0.0.1:7070", want: []string{"http://10.0.0.1:7070"}},
		{name: "several, spaces trimmed", in: "http://a:7070, https://b:7070 ,http://c:7070/", want: []string{"http://a:7070", "https://b:7070", "http://c:7070/"}},
		{name: "the bad one named", in: "http://a:7070,b:7070", wantErr: `"b:7070" (URL 2 of 2): must be an absolute http:// or https:// URL`},
		{name: "one bad, no place", in: "ftp://a", wantErr: `--register: "ftp://a": must be an absolute`},
		{name: "empty entry", in: "http://a:7070,,http://b:7070", wantErr: "URL 2 of 3 is empty"},
		{name: "trailing comma", in: "http://a:7070,", wantErr: "URL 2 of 2 is empty"},
		{name: "query", in: "http://a:7070,http://b:7070/?x=1", wantErr: `"http://b:7070/?x=1" (URL 2 of 2): must have no query or fragment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := registerURLs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("registerURLs(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("registerURLs(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestRegisterListIsCheckedByEveryCommand: backend and both agents take a
// comma-separated --register list and refuse a bad entry with exit 2,
// naming it and its place.
func TestRegisterListIsCheckedByEveryCommand(t *testing.T) {
	t.Parallel()
	const bad = "http://127.0.0.1:7070,127.0.0.2:7070"
	const want = `--register: "127.0.0.2:7070" (URL 2 of 2): must be an absolute http:// or https:// URL`
	for _, args := range [][]string{
		{"backend", "prime", "--listen", "127.0.0.1:0", "--register", bad, "--group", "g"},
		{"agent", "http", "--target", "http://r", "--register", bad, "--group", "g", "--pid", "1"},
		{"agent", "giop", "--listen", "127.0.0.1:0", "--target", testPrimeIOR, "--register", bad, "--group", "g"},
	} {
		_, errOut, code := runCtl(t, "", args...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, %q; want exit 2 mentioning %q", strings.Join(args, " "), code, errOut, want)
		}
	}
}

// TestBackendFailsOverToTheNextRegisterURL: "backend prime --register
// DEAD,LIVE" (DEAD a loopback port nothing listens on, LIVE a real
// balancer) registers and pushes its reports through LIVE.
func TestBackendFailsOverToTheNextRegisterURL(t *testing.T) {
	t.Parallel()
	admin, b := ctlServer(t, "")
	mustCtl(t, admin, "create", "web", "--front-door", "127.0.0.1:0", "--report-interval", "50ms")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()

	events, unsubscribe, err := b.Subscribe("web")
	if err != nil {
		t.Fatal(err)
	}
	defer unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"backend", "prime", "--listen", "127.0.0.1:0", "--register", dead + "," + admin, "--group", "web"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	wait, stopWait := context.WithTimeout(ctx, 15*time.Second)
	defer stopWait()
	for {
		st, err := b.Group("web")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Replicas) == 1 && st.Replicas[0].ReportAgeMS != nil {
			break // registered and reported through the second URL
		}
		select {
		case err := <-done:
			t.Fatalf("backend exited early: %v\n%s", err, errOut.String())
		case _, ok := <-events:
			if !ok {
				t.Fatal("group web went away")
			}
		case <-wait.Done():
			t.Fatalf("no report through the second --register URL within 15s: %+v", st.Replicas)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("backend did not stop")
	}
}
