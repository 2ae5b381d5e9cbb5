package monitor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// TestTCPAddress: with TCP set, Address is a HOST:PORT (and a URL is not);
// pull mode then needs PullURL, since there is no base URL to derive it
// from.
func TestTCPAddress(t *testing.T) {
	t.Parallel()
	valid := monitor.Options{Admin: "http://127.0.0.1:7070", Group: "g", Address: "127.0.0.1:9001", TCP: true, Logger: discardLogger()}
	if _, err := monitor.New(valid); err != nil {
		t.Fatalf("New(%s): %v", valid.Address, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*monitor.Options)
		want string
	}{
		{"a URL", func(o *monitor.Options) { o.Address = "http://127.0.0.1:9001" }, "must be HOST:PORT"},
		{"no port", func(o *monitor.Options) { o.Address = "127.0.0.1" }, "must be HOST:PORT"},
		{"no host", func(o *monitor.Options) { o.Address = ":9001" }, "must be HOST:PORT"},
		{"port 0", func(o *monitor.Options) { o.Address = "127.0.0.1:0" }, "port in [1, 65535]"},
		{"port too big", func(o *monitor.Options) { o.Address = "127.0.0.1:65536" }, "port in [1, 65535]"},
		{"pull without a pull URL", func(o *monitor.Options) { o.Mode = protocol.MonitorPull }, "PullURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := valid
			tc.edit(&o)
			_, err := monitor.New(o)
			if !errors.Is(err, monitor.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrInvalidOptions mentioning %q", err, tc.want)
			}
		})
	}
	pull := valid
	pull.Mode, pull.PullURL = protocol.MonitorPull, "http://127.0.0.1:9100/fulcrum/report"
	if _, err := monitor.New(pull); err != nil {
		t.Errorf("pull with a pull URL: %v", err)
	}
}
