package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/agent/httpagent"
	"github.com/fulcrum-lb/fulcrum/internal/agent/replagent"
	"github.com/fulcrum-lb/fulcrum/monitor"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentReplicatedCmd) }

type agentReplicatedFlags struct {
	adminTLS                                              adminTLSFlags
	target, listen, advertise, register, group, joinToken string
	dataDir, giopListen, outcallTarget                    string
	maxPayload                                            protocol.ByteSize
	wait                                                  time.Duration
	giop, retryForever                                    bool
}

func newAgentReplicatedCmd() *cobra.Command {
	f := agentReplicatedFlags{maxPayload: replagent.DefaultMaxPayload}
	cmd := &cobra.Command{
		Use:   "replicated --target URL --listen ADDR --register ADMIN_URL[,...] --group NAME --data-dir DIR",
		Short: "Agent beside a replica of a replicated group: applies the group's log to an unmodified server",
		Long: `Run beside each replica of a replicated group (binding replicated), in front
of its unmodified server (--target). The agent registers the replica with
its own --listen address, streams the group's log from the balancer
(GET /v1/groups/NAME/log, failing over across the --register URLs) and
delivers the entries to the server one at a time, in log order, each
stamped with Fulcrum-Time, Fulcrum-Seed and Fulcrum-Position. It posts each
reply to the instance that appended the entry, keeps the last 10,000
replies (or 10 minutes of them) for bridges that ask again, and posts how
far it has applied to every --register URL about once a second.

The applied position is kept in agent.db in --data-dir, written after every
entry and synced to disk before each report; give each replica a directory of its own, and
empty it when its server loses its state. On SIGTERM or SIGINT the agent
finishes the entry it is delivering first. An agent that is killed between
a delivery and that write delivers the entry once more when it restarts,
unless it rejoins by state transfer.

Joining: when the server can transfer its state (GET and PUT
/fulcrum/state; 404, 405 or 501 mean it cannot) and a live replica has
applied entries, the agent takes a checkpoint from that replica's agent
(GET /fulcrum/replication/checkpoint), sets it on its server and streams
from the position after it. Otherwise it resumes after its stored position;
if the log is trimmed beyond it, it stops, saying the replica must be reset
with state transfer.

The agent stops (exit status 1, and the replica leaves the group) when the
server does not answer an entry or an entry cannot be decoded: it never
skips one.

On --listen it serves GET /fulcrum/replication/checkpoint (the server's
state taken between two entries, Fulcrum-Position naming the last entry
applied), GET /fulcrum/replication/healthz (200 while the agent applies
the log, 503 while it starts or joins and after it stopped: where the
balancer probes the replica unless the group sets health.path) and passes
every other request to --target: the read-only calls a bridge sends.
With --giop the replica is still registered by this URL, not by the
servant's IOR: the bridge sends the servant nothing but the log. Let only
the balancer, the other agents and its server reach it. Its first line on
stdout is "listening on <URL>".

Replicated callers: the server may send its outgoing calls through the
agent as through an HTTP proxy (fulcrum backend relay --proxy
http://<--listen>). A call made while the agent delivers entry P is posted
as "<group>/P/<index>" (index: the calls of that entry so far, from 0) to
POST /v1/groups/NAME/outcalls of the first --register URL that answers
(give every agent of the group the URLs in the same order); the balancer
calls the callee once with that key as Idempotency-Key and every replica's
server gets its reply (502 when no balancer answered). A call made when no
entry is being delivered gets 409 (code no_entry). Callees must be http://
URLs: CONNECT (https://) is refused with 405. A server must make the
calls of one entry one after another, in the same order on every replica.

With --giop, --giop-listen HOST:PORT and --outcall-target REF, the agent
takes the servant's outgoing GIOP calls on a GIOP listener: it prints
"giop outcalls at <IOR>" first, the reference the servant must call its
callee by (fulcrum backend relay --giop --next <IOR>), and sends every
Request that comes there to REF the same way, keyed by the entry being
delivered (the balancer adds the key as an FT_REQUEST service context);
the servant gets the callee's Reply, BAD_INV_ORDER for a call made while
no entry is being delivered, TRANSIENT when the call could not be made.`,
		Example: `  fulcrum agent replicated --target http://127.0.0.1:9001 --listen 127.0.0.1:9101 \
      --register http://10.0.0.1:7070,http://10.0.0.2:7070 --group counter --data-dir /var/lib/fulcrum-agent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return usageErr(cmd, "%v", err)
			}
			return runAgentReplicated(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(c, "%v", err) })
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "the server's base URL (with --giop its IOR or corbaloc URL) (required)")
	fl.StringVar(&f.listen, "listen", "", "address the agent serves checkpoints and passes read-only calls on (required)")
	fl.StringVar(&f.advertise, "advertise", "", "base URL the balancer and the other agents reach --listen at, registered as the replica's address (default http://<listen address>)")
	fl.StringVar(&f.register, "register", "", registerUsage+" (required)")
	fl.StringVar(&f.group, "group", "", "replicated group to join (required)")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the agent's state, agent.db (required)")
	fl.StringVar(&f.joinToken, "join-token", os.Getenv("FULCRUM_JOIN_TOKEN"), "join or admin token to register with (env FULCRUM_JOIN_TOKEN)")
	fl.Var(byteSizeFlag{&f.maxPayload}, "max-payload", "the group's replicated.max_payload: a log stream line may hold it plus 64 KiB, a reply's body 4 times it")
	fl.BoolVar(&f.giop, "giop", false, "the server is a CORBA servant (--target an IOR or corbaloc URL)")
	fl.StringVar(&f.giopListen, "giop-listen", "", "with --giop: host:port the agent takes the servant's outgoing GIOP calls on (needs --outcall-target); the reference to give the servant as its callee's is printed first")
	fl.StringVar(&f.outcallTarget, "outcall-target", "", "with --giop-listen: the IOR or corbaloc URL of the callee the servant's outgoing calls go to (through the balancer)")
	fl.DurationVar(&f.wait, "wait", 30*time.Second, "how long to wait for --target to answer before giving up")
	f.adminTLS.register(fl)
	addRetryForever(cmd, &f.retryForever)
	return cmd
}

// byteSizeFlag is a protocol.ByteSize flag ("1MiB", "1048576").
type byteSizeFlag struct{ v *protocol.ByteSize }

func (b byteSizeFlag) String() string {
	if b.v == nil {
		return ""
	}
	return b.v.String()
}
func (b byteSizeFlag) Set(s string) error { return b.v.UnmarshalText([]byte(s)) }
func (b byteSizeFlag) Type() string       { return "size" }

// check validates the flags before anything starts.
func (f *agentReplicatedFlags) check() error {
	switch {
	case f.target == "":
		return errors.New("--target is required: the server's base URL")
	case f.listen == "":
		return errors.New("--listen is required: the balancer and the other agents reach the replica there")
	case f.register == "":
		return errors.New("--register is required: the balancer's admin URL(s)")
	case f.group == "":
		return errors.New("--group is required")
	case f.dataDir == "":
		return errors.New("--data-dir is required: the agent keeps its applied position there")
	}
	if !f.giop {
		if err := absoluteHTTP(f.target); err != nil {
			return fmt.Errorf("--target %q: %v", f.target, err)
		}
	}
	switch {
	case (f.giopListen != "" || f.outcallTarget != "") && !f.giop:
		return errors.New("--giop-listen and --outcall-target need --giop: they take a GIOP servant's outgoing calls")
	case (f.giopListen == "") != (f.outcallTarget == ""):
		return errors.New("--giop-listen and --outcall-target go together: where the servant's outgoing calls come in, and the callee they go to")
	case f.giopListen != "":
		if err := checkGIOPOutcalls(f.giopListen, f.outcallTarget); err != nil {
			return err
		}
	}
	if f.advertise != "" {
		if err := absoluteHTTP(f.advertise); err != nil {
			return fmt.Errorf("--advertise %q: %v", f.advertise, err)
		}
	}
	if _, err := registerURLs(f.register); err != nil {
		return err
	}
	if f.maxPayload < 1024 || f.maxPayload > 1<<30 {
		return fmt.Errorf("--max-payload %s: must be in [1KiB, 1GiB]", f.maxPayload)
	}
	if f.wait <= 0 {
		return fmt.Errorf("--wait %s: must be > 0", f.wait)
	}
	return nil
}

func runAgentReplicated(ctx context.Context, f agentReplicatedFlags, stdout io.Writer) error {
	ctx, log, adminHC, err := agentStart(ctx, &f.adminTLS)
	if err != nil {
		return err
	}
	if adminHC == nil {
		adminHC = &http.Client{Timeout: 10 * time.Second}
	}
	streamHC := *adminHC
	streamHC.Timeout = 0 // a stream lasts; HTTPSource watches it for silence

	var deliverer replagent.Deliverer
	var proxy http.Handler = http.NotFoundHandler()
	if f.giop {
		if deliverer, err = newGIOPDeliverer(ctx, f.target, f.wait); err != nil {
			return err
		}
	} else {
		if err := httpagent.WaitReachable(ctx, &http.Client{Timeout: 2 * time.Second}, f.target, f.wait); err != nil {
			return err
		}
		// A reply is posted base64-encoded in a batch the admin API takes
		// up to 6 × max_payload of: 4 × max_payload of body fits.
		if deliverer, err = replagent.NewHTTP(f.target, replagent.HTTPOptions{MaxReply: 4 * f.maxPayload.Int64()}); err != nil {
			return exitCode(2, err)
		}
		if proxy, err = replagent.NewProxy(f.target); err != nil {
			return exitCode(2, err)
		}
	}
	store, err := replagent.OpenStore(f.dataDir, f.group)
	if err != nil {
		deliverer.Close()
		return exitCode(1, err)
	}
	defer store.Close()

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		deliverer.Close()
		return fmt.Errorf("listen: %w", err)
	}
	listenURL := agentURL(f.advertise, ln)

	var agent atomic.Pointer[replagent.Agent]
	if f.giopListen != "" {
		out, ref, err := startGIOPOutcalls(f, &agent, log)
		if err != nil {
			ln.Close()
			deliverer.Close()
			return err
		}
		defer out.Close()
		fmt.Fprintf(stdout, "giop outcalls at %s\n", ref)
	}
	admins := checkedRegisterURLs(f.register)
	mon, err := monitor.NewExternal(monitor.Options{
		Admins: admins, Group: f.group, Address: listenURL, JoinToken: f.joinToken,
		Mode: protocol.MonitorPush, Load: monitor.LoadRate, Logger: log, HTTPClient: adminHC,
		RegisterAttempts: registerAttempts(f.retryForever),
	}, func(now time.Time) map[string]float64 {
		if a := agent.Load(); a != nil {
			return a.Metrics(now)
		}
		return nil
	})
	if err != nil {
		ln.Close()
		deliverer.Close()
		return exitCode(2, err)
	}
	token := func() (string, bool) {
		r, ok := mon.Registered()
		return r.Token, ok && r.Token != ""
	}

	stop := catchStop()
	defer stop.release()
	errc := make(chan error, 2)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := agent.Load(); a != nil {
			a.Handler(proxy).ServeHTTP(w, r)
			return
		}
		if replagent.IsOutcall(r) {
			replagent.RefuseOutcall(w, r, "the agent is starting")
			return
		}
		if r.URL.Path == protocol.CheckpointPath {
			http.Error(w, "the agent is starting", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == protocol.ReplicationHealthzPath {
			replagent.ServeHealth(w, r, nil)
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on %s\n", listenURL)
	if err := mon.Start(); err != nil {
		return err
	}
	waitCtx, stopWait := untilMonitorFails(ctx, mon)
	defer stopWait()
	runCtx, stopRun := context.WithCancel(waitCtx)
	defer stopRun()
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		reg, err := mon.WaitRegistered(runCtx)
		if err != nil {
			deliverer.Close()
			return // stopping, or the monitor gave up (waitCtx ends)
		}
		a, err := replagent.New(replagent.Options{
			Group: f.group, Self: reg.ID, Deliverer: deliverer, Store: store, Admins: admins, Logger: log,
			Source: &replagent.HTTPSource{Admins: admins, Group: f.group, Token: token, Client: &streamHC,
				MaxPayload: int(f.maxPayload), Logger: log},
			Admin: &replagent.AdminClient{Group: f.group, Token: token, Client: adminHC, MaxBatch: 6 * int(f.maxPayload),
				OutcallClient: &streamHC},
		})
		if err != nil {
			deliverer.Close()
			errc <- err
			return
		}
		agent.Store(a)
		if err := a.Run(runCtx); err != nil {
			errc <- err
		}
	}()
	log.Info("replicated agent started", "group", f.group, "target", f.target, "address", listenURL, "data_dir", f.dataDir)
	_, runErr := stop.await(waitCtx, errc)
	if runErr != nil {
		log.Error("the agent stops; the replica leaves the group", "err", runErr)
		runErr = exitCode(1, runErr)
	}
	runErr = monitorErr(runErr, mon)
	stopRun()
	<-agentDone
	return agentLeave(log, mon, srv, runErr)
}
