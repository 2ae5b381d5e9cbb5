package remoting

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/internal/bench"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// statefulResult is what one stateful run measured.
type statefulResult struct {
	// all and kinds hold the latencies of the answered calls, from their
	// intended send times: every call, and each kind's.
	all   *stats.Recorder
	kinds [numKinds]*stats.Recorder
	// Errors counts the calls without a 200 answer (Refused those a
	// replica answered 404 because it does not hold the object: a call
	// that reached the wrong replica), FirstError one of them.
	errors, refused int64
	firstError      string
	xSum            int64
	answers         *statefulAnswers
}

// objectAnswer is the JSON of the prime service's object answers.
type objectAnswer struct {
	ID       string `json:"id"`
	ServedBy string `json:"served_by"`
}

// createObjects creates one client-activated object per client through
// the front door (POST /objects) and returns each one's path (its 201's
// Location), noting its creator in answers.
func createObjects(ctx context.Context, hc *http.Client, base string, clients int, answers *statefulAnswers) ([]string, error) {
	paths := make([]string, clients)
	for c := range clients {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/objects", nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("creating client %d's object: %w", c+1, err)
		}
		var a objectAnswer
		err = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusCreated || err != nil || a.ID == "" || loc != "/objects/"+a.ID {
			return nil, fmt.Errorf("creating client %d's object: status %s, Location %q, id %q (%v); want 201 with Location /objects/{id}", c+1, resp.Status, loc, a.ID, err)
		}
		answers.creators[a.ID] = a.ServedBy
		paths[c] = loc
	}
	return paths, nil
}

// callStateful makes one call of a stateful run and returns the replica
// that answered 200, or the answer's status.
func callStateful(ctx context.Context, hc *http.Client, url string, x int) (servedBy string, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set(protocol.HeaderCost, "cpu="+strconv.Itoa(x))
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return "", resp.StatusCode, nil
	}
	var a objectAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return "", resp.StatusCode, err
	}
	return a.ServedBy, resp.StatusCode, nil
}

// runStatefulSample runs one stateful run through base: the clients'
// objects are created, then every client sends its calls open-loop, as
// runRemotingSample does, each to its kind's path (singleton k is
// tag+"-s"+k). Latencies count from the intended send time.
func runStatefulSample(ctx context.Context, hc *http.Client, base, tag string, clients [][]statefulCall, start func() time.Time) (statefulResult, error) {
	res := statefulResult{all: stats.NewRecorder(), answers: newStatefulAnswers()}
	for k := range res.kinds {
		res.kinds[k] = stats.NewRecorder()
	}
	paths, err := createObjects(ctx, hc, base, len(clients), res.answers)
	if err != nil {
		return res, err
	}
	t0 := start()
	var mu sync.Mutex
	slots := make(chan struct{}, remotingMaxInflight)
	var calls, senders sync.WaitGroup
	for ci, sample := range clients {
		senders.Add(1)
		go func() {
			defer senders.Done()
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			at := t0
			for _, c := range sample {
				at = at.Add(c.Gap)
				if !bench.SleepUntil(ctx, timer, at) {
					return
				}
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				intended := at
				var url, key string
				switch c.kind {
				case kindSingleton:
					key = tag + "-s" + strconv.Itoa(c.singleton)
					url = base + "/singletons/" + key + "?x=" + strconv.Itoa(c.X)
				case kindActivated:
					key = strings.TrimPrefix(paths[ci], "/objects/")
					url = base + paths[ci] + "?x=" + strconv.Itoa(c.X)
				default:
					url = base + "/count/" + strconv.Itoa(c.X)
				}
				calls.Add(1)
				go func() {
					defer calls.Done()
					defer func() { <-slots }()
					by, status, err := callStateful(ctx, hc, url, c.X)
					d := time.Since(intended)
					if ctx.Err() != nil {
						return // cancelled: not a measurement
					}
					mu.Lock()
					defer mu.Unlock()
					if err != nil || status != http.StatusOK {
						res.errors++
						if status == http.StatusNotFound && c.kind == kindActivated {
							res.refused++
						}
						if res.firstError == "" {
							if err == nil {
								err = fmt.Errorf("%s call: status %d", c.kind, status)
							}
							res.firstError = err.Error()
						}
						return
					}
					res.all.Record(d)
					res.kinds[c.kind].Record(d)
					res.xSum += int64(c.X)
					switch c.kind {
					case kindSingleton:
						res.answers.answered(res.answers.single, key, by)
					case kindActivated:
						res.answers.answered(res.answers.objects, key, by)
					}
				}()
			}
		}()
	}
	senders.Wait()
	calls.Wait()
	return res, ctx.Err()
}

// objectCounts reads every replica's own counts (GET /objects, straight
// to each replica).
func objectCounts(ctx context.Context, hc *http.Client, bases []string) ([]backend.ObjectCounts, error) {
	out := make([]backend.ObjectCounts, 0, len(bases))
	for _, b := range bases {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b+"/objects", nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("reading the objects of replica %s: %w", b, err)
		}
		var c backend.ObjectCounts
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			return nil, fmt.Errorf("reading the objects of replica %s: status %s (%v)", b, resp.Status, err)
		}
		out = append(out, c)
	}
	return out, nil
}
