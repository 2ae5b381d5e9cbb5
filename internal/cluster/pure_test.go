package cluster

import (
	"errors"
	"testing"
	"time"
)

func TestDecodeEntry(t *testing.T) {
	t.Parallel()
	const prefix = "/fulcrum/"
	tests := []struct {
		name, key, value string
		want             string // the entry's admin URL; "" when an error is wanted
	}{
		{"entry", "/fulcrum/instances/a", `{"name":"a","admin_url":"http://10.0.0.1:7070","front_doors":{"prime":{"address":"0.0.0.0:8000"}}}`, "http://10.0.0.1:7070"},
		{"not JSON", "/fulcrum/instances/a", `{"name":`, ""},
		{"another instance's name", "/fulcrum/instances/a", `{"name":"b"}`, ""},
		{"nested key", "/fulcrum/instances/a/b", `{"name":"a/b"}`, ""},
		{"no name", "/fulcrum/instances/", `{"name":""}`, ""},
		{"other prefix", "/other/instances/a", `{"name":"a"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := DecodeEntry(prefix, tt.key, []byte(tt.value))
			if tt.want == "" {
				if !errors.Is(err, ErrBadEntry) {
					t.Fatalf("DecodeEntry(%q, %q) = %+v, %v; want an ErrBadEntry", tt.key, tt.value, e, err)
				}
				return
			}
			if err != nil || e.AdminURL != tt.want || e.FrontDoors["prime"].Address != "0.0.0.0:8000" {
				t.Fatalf("DecodeEntry(%q, %q) = %+v, %v; want admin URL %s and prime at 0.0.0.0:8000", tt.key, tt.value, e, err, tt.want)
			}
		})
	}
}

func TestDecideClaim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		held        bool
		holder, own int64
		waitOver    bool
		want        claimDecision
	}{
		{"free", false, 0, 0, false, claimCreate},
		{"free after a wait", false, 0, 0, true, claimCreate},
		{"own lease", true, 7, 7, false, claimOurs},
		{"another lease, waiting", true, 7, 0, false, claimWait},
		{"another lease, our own elsewhere", true, 7, 8, false, claimWait},
		{"another lease after the wait", true, 7, 0, true, claimRefuse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := decideClaim(tt.held, tt.holder, tt.own, tt.waitOver); got != tt.want {
				t.Errorf("decideClaim(%v, %d, %d, %v) = %v, want %v", tt.held, tt.holder, tt.own, tt.waitOver, got, tt.want)
			}
		})
	}
	if got := claimWaitFor(5*time.Second, 3*time.Second); got != 5*time.Second+ExpiryGrace {
		t.Errorf("claimWaitFor(holder 5s) = %v, want the holder's TTL and the grace", got)
	}
	if got := claimWaitFor(0, 3*time.Second); got != 3*time.Second+ExpiryGrace {
		t.Errorf("claimWaitFor(holder unknown) = %v, want the own TTL and the grace", got)
	}
}

func TestReachable(t *testing.T) {
	t.Parallel()
	tests := []struct{ bound, admin, want string }{
		{"10.0.0.2:8000", "http://10.0.0.9:7070", "10.0.0.2:8000"},
		{"0.0.0.0:8000", "http://10.0.0.2:7070", "10.0.0.2:8000"},
		{"[::]:8000", "https://fulcrum-b.example:7070", "fulcrum-b.example:8000"},
		{":8000", "http://[fd00::2]:7070", "[fd00::2]:8000"},
		{"0.0.0.0:8000", "", ""},
		{"127.0.0.1:0", "http://127.0.0.1:7070", ""},
		{"not an address", "http://127.0.0.1:7070", ""},
	}
	for _, tt := range tests {
		if got := Reachable(tt.bound, tt.admin); got != tt.want {
			t.Errorf("Reachable(%q, %q) = %q, want %q", tt.bound, tt.admin, got, tt.want)
		}
	}
}
