package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// A relative --out (the default, ./bench-results/...) must work for every
// process the bench starts: NGINX resolves the paths of its command line
// against its prefix, so a relative output directory once made it exit
// at start and the whole overhead run fail.
func TestRelativeOutputDirectory(t *testing.T) {
	needCompetitor(t, toolNGINX)
	wd := t.TempDir()
	t.Chdir(wd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := NewEnv(ctx, "out", Options{Size: Quick})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if want := filepath.Join(wd, "out"); env.Dir != want {
		t.Errorf("env.Dir %q, want %q", env.Dir, want)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "served")
	}))
	defer backend.Close()
	proxy, err := env.StartNGINX(ctx, []string{backend.URL})
	if err != nil {
		t.Fatalf("NGINX under a relative output directory: %v", err)
	}
	res, err := http.Get(proxy.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "served" {
		t.Errorf("through NGINX: %d %q", res.StatusCode, body)
	}
}
