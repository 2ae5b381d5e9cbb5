package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// page drives one tab of the headless browser.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// poll waits, up to 30 s, for the expression js to be true in the page.
func (p page) poll(what, js string) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		shown, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		p.t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, shown)
	}
}

// open opens the dashboard at adminURL, gives the admin token and waits
// until the page follows the event stream.
func (p page) open(adminURL string) {
	p.t.Helper()
	p.run("open the page", chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(adminURL+"/ui/"))
	p.poll("the page asks for the token", `!document.getElementById("login").hidden && document.activeElement.id === "token"`)
	p.run("give the token", chromedp.SendKeys("#token", adminToken+"\r"))
	p.poll("the stream is live", `document.getElementById("conn").textContent.startsWith("live")`)
}

// screenshot saves the page as name in $FULCRUM_TEST_ARTIFACTS (else a
// temporary directory).
func (p page) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("FULCRUM_TEST_ARTIFACTS")
	if dir == "" {
		dir = p.t.TempDir()
	}
	screenshot(p.ctx, p.t, filepath.Join(dir, name))
}
