package backend

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestIsPrime(t *testing.T) {
	t.Parallel()
	primes := map[uint64]bool{0: false, 1: false, 2: true, 3: true, 4: false, 9: false, 97: true, 7919: true, 7921: false, 1_000_000_007: true}
	for n, want := range primes {
		if got := IsPrime(n); got != want {
			t.Errorf("IsPrime(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestPrimeCount(t *testing.T) {
	t.Parallel()
	for x, want := range map[int]int{0: 0, 2: 0, 3: 1, 10: 4, 100: 25, 1000: 168, 30000: 3245} {
		if got := PrimeCount(x); got != want {
			t.Errorf("PrimeCount(%d) = %d, want %d", x, got, want)
		}
	}
}

func TestPrimeHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewPrime(func() string { return "r1" }))
	defer srv.Close()
	get := func(path string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, m
	}
	if code, m := get("/prime/7919"); code != 200 || m["prime"] != true || m["served_by"] != "r1" {
		t.Errorf("/prime/7919 = %d %v", code, m)
	}
	if code, m := get("/count/100"); code != 200 || m["count"] != float64(25) {
		t.Errorf("/count/100 = %d %v", code, m)
	}
	for _, bad := range []string{"/prime/-1", "/prime/abc", "/count/999999999999"} {
		code, m := get(bad)
		if code != 400 || m["error"] == nil {
			t.Errorf("%s = %d %v, want 400 with error", bad, code, m)
		}
	}
	body := bytes.Repeat([]byte("x"), 2400)
	resp, err := http.Post(srv.URL+"/echo", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, body) {
		t.Errorf("/echo returned %d bytes, want %d", len(got), len(body))
	}
}

func TestCallPrime(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewPrime(func() string { return "r7" }))
	defer srv.Close()
	got, err := CallPrime(t.Context(), srv.Client(), srv.URL+"/prime/97")
	if err != nil || got != "r7" {
		t.Fatalf("CallPrime = %q, %v; want r7", got, err)
	}
	if _, err := CallPrime(t.Context(), srv.Client(), srv.URL+"/prime/abc"); err == nil {
		t.Fatal("CallPrime of a 400 answer succeeded")
	}
	if _, err := CallPrime(t.Context(), srv.Client(), srv.URL+"/nowhere"); err == nil {
		t.Fatal("CallPrime of a 404 answer succeeded")
	}
}
