package leader_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fulcrum-lb/fulcrum/internal/leader"
	"github.com/fulcrum-lb/fulcrum/internal/store"
	"github.com/fulcrum-lb/fulcrum/internal/store/etcdstore"
)

// childEnv makes the re-executed test binary an "instance" of the
// real-etcd tests instead of running tests: it campaigns for group g and
// writes through its fence (Fence.Store on an etcdstore), printing what happens, until stdin ends. Its
// settings come from the environment:
//
//	FULCRUM_LEADER_CHILD   instance name
//	LEADER_ENDPOINTS       etcd client URLs, comma-separated
//	LEADER_PREFIX          the deployment's prefix
//	LEADER_TTL             session TTL in seconds
//	LEADER_WRITER          "leader": write through e.Fence while it says
//	                       leader (as the balancer will); "zombie": keep
//	                       the first fence won and write through it
//	                       forever, as a leader that never notices its
//	                       loss would
//
// Lines on stdout:
//
//	change to=STATE from=STATE term=N why=... at=UNIXNANO
//	wrote term=N rev=R at=UNIXNANO began=UNIXNANO (began: when the txn was sent)
//	refused term=N            (leader.ErrDeposed: nothing changed)
//	failed term=N err=...     (outcome unknown)
const childEnv = "FULCRUM_LEADER_CHILD"

// probeKey is the store key the instances write, through their fenced
// store (etcd key <prefix>kv/probe).
const probeKey = "probe"

// writeEvery paces the child's writes.
const writeEvery = 20 * time.Millisecond

func runChild(name string) int {
	eps := strings.Split(os.Getenv("LEADER_ENDPOINTS"), ",")
	prefix := os.Getenv("LEADER_PREFIX")
	ttl, err := strconv.Atoi(os.Getenv("LEADER_TTL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "LEADER_TTL:", err)
		return 2
	}
	zombie := os.Getenv("LEADER_WRITER") == "zombie"
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cli.Close()
	st, err := etcdstore.Open(context.Background(), etcdstore.Options{Endpoints: eps, Prefix: prefix, DialTimeout: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	e, err := leader.New(leader.Options{
		Client: cli, Prefix: prefix, Instance: name, SessionTTL: time.Duration(ttl) * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		OnChange: func(ch leader.Change) {
			say("change to=%s from=%s term=%d why=%s at=%d", ch.To, ch.From, ch.Term, strings.ReplaceAll(ch.Why, " ", "-"), time.Now().UnixNano())
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := e.Join("g", 100*time.Millisecond); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		write(ctx, e, st, name, zombie, say)
	}()
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until stdin ends
	stop()
	wg.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Close(cctx); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
	}
	say("closed")
	return 0
}

func write(ctx context.Context, e *leader.Elector, st *etcdstore.Store, name string, zombie bool, say func(string, ...any)) {
	tick := time.NewTicker(writeEvery)
	defer tick.Stop()
	var kept leader.Fence
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f, ok := kept, kept.Term != 0
		if !ok {
			f, ok = e.Fence("g")
			if zombie && ok {
				kept = f
			}
		}
		if !ok {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		began := time.Now().UnixNano()
		_, rev, _, err := f.Store(st).Txn(wctx, nil, []store.Op{store.Put(probeKey, fmt.Appendf(nil, "%s term=%d seq=%d", name, f.Term, seq))})
		cancel()
		switch {
		case err == nil: // no conditions: applied
			say("wrote term=%d rev=%d at=%d began=%d", f.Term, rev, time.Now().UnixNano(), began)
		case errors.Is(err, leader.ErrDeposed):
			say("refused term=%d", f.Term)
		case ctx.Err() != nil:
			return
		default:
			say("failed term=%d err=%s", f.Term, strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
}
