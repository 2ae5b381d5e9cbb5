package backend_test

import (
	"testing"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/giop/orb"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// BenchmarkGIOPPrimeCall measures one closed-loop is_prime(1009) call over
// loopback, with and without the monitor built in:
//
//	flock /tmp/fulcrum-bench.lock go test -run - -bench GIOPPrimeCall ./internal/backend
func BenchmarkGIOPPrimeCall(b *testing.B) {
	for _, monitored := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "monitored"}[monitored]
		b.Run(name, func(b *testing.B) {
			var opts backend.GIOPPrimeOptions
			if monitored {
				mon, err := monitor.New(monitor.Options{Group: "prime", Token: "t", Mode: protocol.MonitorPull,
					PullURL: "http://127.0.0.1:1/fulcrum/report", FrontDoor: "corbaloc:iiop:127.0.0.1:1/prime"})
				if err != nil {
					b.Fatal(err)
				}
				opts.Monitor, opts.Group = mon, "prime"
			}
			_, ref := startGIOPPrime(b, opts)
			o, err := orb.New(orb.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			obj, _ := o.Object(ref)
			p := orb.Prime{Object: obj}
			ctx := b.Context()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := p.IsPrime(ctx, 1009); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
