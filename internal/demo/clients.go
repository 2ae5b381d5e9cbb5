package demo

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/client"
	"github.com/fulcrum-lb/fulcrum/internal/backend"
)

// clientGap is the pause between starting one client and the next.
const clientGap = 250 * time.Millisecond

// primeN is the number each call asks about: trial division up to its
// square root is a small, real CPU cost.
const primeN = 1_000_003

type clientSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (c *clientSet) stop() {
	c.cancel()
	c.wg.Wait()
}

// startClients starts one open-loop client per rate, one after another.
// Each keeps its own binding through the client library.
func startClients(ctx context.Context, frontDoor string, rates []float64, t *tally) *clientSet {
	ctx, cancel := context.WithCancel(ctx)
	cs := &clientSet{cancel: cancel}
	for i, rate := range rates {
		cs.wg.Add(1)
		go func() {
			defer cs.wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i) * clientGap):
			}
			runClient(ctx, frontDoor, rate, t)
		}()
	}
	return cs
}

// runClient calls the front door at rate calls/s until ctx is done. Calls
// are scheduled on a fixed grid (open loop); a late call is sent at once
// and does not shift the grid.
func runClient(ctx context.Context, frontDoor string, rate float64, t *tally) {
	tr := client.NewTransport(client.Options{})
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	url := fmt.Sprintf("%s/prime/%d", frontDoor, primeN)
	period := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		before, _ := tr.Binding(frontDoor)
		id, err := backend.CallPrime(ctx, hc, url)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			t.fail()
		default:
			t.served(id)
		}
		if after, ok := tr.Binding(frontDoor); ok && before.Replica != "" && after.Replica != before.Replica {
			t.rebind()
		}
		next = next.Add(period)
		if wait := time.Until(next); wait > 0 {
			timer.Reset(wait)
		} else {
			timer.Reset(0)
		}
	}
}
