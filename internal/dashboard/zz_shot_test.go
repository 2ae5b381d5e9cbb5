package dashboard_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestZZShot(t *testing.T) {
	url := os.Getenv("SHOT_URL")
	if url == "" {
		t.Skip()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bctx := browser(ctx, t)
	d, _ := time.ParseDuration(os.Getenv("SHOT_WAIT"))
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1400, 1100), chromedp.Navigate(url), chromedp.Sleep(d)); err != nil {
		t.Fatal(err)
	}
	b, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(os.Getenv("SHOT_OUT"), b, 0o644)
}
