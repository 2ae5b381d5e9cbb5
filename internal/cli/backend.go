package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fulcrum-lb/fulcrum/internal/backend"
	"github.com/fulcrum-lb/fulcrum/monitor"
)

func init() { subcommands = append(subcommands, newBackendCmd) }

func newBackendCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backend",
		Short: "Run a test service as a replica: prime (the benchmarks'), counter and relay (replication's), echo (bench tcp's)",
	}
	cmd.AddCommand(newBackendPrimeCmd(), newBackendCounterCmd(), newBackendRelayCmd(), newBackendEchoCmd())
	return cmd
}

type primeFlags struct {
	listen, advertise, register, group, token, joinToken, load, mode string
	weight, cpus                                                     float64
	giop, retryForever                                               bool
	// tlsCert and tlsKey make the replica serve HTTPS.
	tlsCert, tlsKey string
	adminTLS        adminTLSFlags
}

func newBackendPrimeCmd() *cobra.Command {
	var f primeFlags
	cmd := &cobra.Command{
		Use:   "prime --listen ADDR [--register ADMIN_URL --group NAME]",
		Short: "Serve the prime service over HTTP (GET /prime/{n}, GET /count/{x}, POST /echo, GET /healthz)",
		Long: `Serve the benchmarks' test service: GET /prime/{n} answers whether n is prime
by trial division (the CPU-bound call of Othman et al., 2001), GET /count/{x}
the number of primes below x (getPrimeCount, from Chen et al.'s .NET Remoting
paper), POST /echo returns the body, GET /healthz. Its stateful objects, for
the stateful cases of "fulcrum bench remoting": POST /objects creates a
client-activated object (201, Location /objects/{id}), GET /objects/{id}?x=N
calls it (404 on a replica that does not hold it), GET /singletons/{name}?x=N
calls a singleton, GET /objects lists the calls each object held here served.

With --register the replica joins a group through the Go monitor library: it
registers (with replace, so a restarted replica keeps its id), reports its
load (calls/s by default) every report interval, obeys advisories, and
deregisters on SIGTERM or SIGINT. Its first line on stdout is
"listening on <URL>". When the balancer refuses the registration (401: the
group needs a join token, --join-token, and none or a wrong one was given;
403: the address is blocked) the first refusal is logged as an error and the
process exits 1 after 5 tries, unless --retry-forever.

With --giop it serves the same service as the CORBA interface
  interface Prime { boolean is_prime(in long n); long prime_count(in long x); };
(repository id IDL:Prime:1.0, object key "Prime") over GIOP 1.0-1.2 instead,
--advertise being host:port, and its first line is "listening on <IOR>": the
reference to call it by, and the address it registers with (push monitor only).

With --tls-cert and --tls-key it serves HTTPS (HTTP/1.1 and h2 by ALPN), and
--advertise defaults to https://<listen address>. --cacert, --cert and --key
are for the admin API at --register (its CA, and a client certificate when it
asks for one).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.register != "" && f.group == "" {
				return exitCode(2, errors.New("--group is required with --register"))
			}
			if _, err := registerURLs(f.register); err != nil {
				return exitCode(2, err)
			}
			if (f.tlsCert == "") != (f.tlsKey == "") {
				return exitCode(2, errors.New("--tls-cert and --tls-key must be given together"))
			}
			if f.giop && f.tlsCert != "" {
				return exitCode(2, errors.New("--tls-cert: not available with --giop"))
			}
			if f.giop {
				return runPrimeGIOP(cmd.Context(), f, cmd.OutOrStdout())
			}
			return runPrime(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9001", "address to listen on (port 0: any free port)")
	fl.StringVar(&f.advertise, "advertise", "", "base URL clients reach this replica at (default http://<listen address>)")
	fl.StringVar(&f.register, "register", "", registerUsage)
	fl.StringVar(&f.group, "group", "", "group to join (with --register)")
	fl.StringVar(&f.token, "token", "", "replica token from an earlier registration (fulcrum ctl add) instead of registering")
	fl.StringVar(&f.joinToken, "join-token", os.Getenv("FULCRUM_JOIN_TOKEN"), "join or admin token to register with (env FULCRUM_JOIN_TOKEN)")
	fl.StringVar(&f.load, "load", string(monitor.LoadRate), "what to report as load: rate, inflight, cpu or latency")
	fl.StringVar(&f.mode, "monitor", "push", "monitor mode: push or pull")
	fl.Float64Var(&f.weight, "weight", 0, "relative capacity (default 1)")
	fl.Float64Var(&f.cpus, "cpus", 0, "cores this replica may use, the denominator of its reported cpu (default: its cgroup's CPU limit where below GOMAXPROCS, else GOMAXPROCS)")
	fl.BoolVar(&f.giop, "giop", false, "serve the Prime CORBA interface over GIOP/IIOP instead of HTTP")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate to serve HTTPS with (needs --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.adminTLS.register(fl)
	addRetryForever(cmd, &f.retryForever)
	return cmd
}

func runPrime(ctx context.Context, f primeFlags, stdout interface{ Write([]byte) (int, error) }) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var serveTLS *tls.Config
	if f.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return exitCode(2, fmt.Errorf("--tls-cert %q, --tls-key %q: must be a readable PEM certificate and its key: %w", f.tlsCert, f.tlsKey, err))
		}
		serveTLS = &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}
	}
	adminHC, err := f.adminTLS.client(10 * time.Second)
	if err != nil {
		return exitCode(2, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := f.advertise
	if addr == "" {
		scheme := "http://"
		if serveTLS != nil {
			scheme = "https://"
		}
		addr = scheme + ln.Addr().String()
	}
	if serveTLS != nil {
		ln = tls.NewListener(ln, serveTLS)
	}
	servedBy := func() string { return addr }
	var handler http.Handler
	var mon *monitor.Monitor
	if f.register != "" || f.token != "" {
		mon, err = monitor.New(monitor.Options{
			Admins: checkedRegisterURLs(f.register), Group: f.group, Address: addr, Token: f.token, JoinToken: f.joinToken,
			Weight: f.weight, CPUs: f.cpus, Mode: f.mode, Load: monitor.LoadSource(f.load), Logger: log,
			HTTPClient:       adminHC,
			RegisterAttempts: registerAttempts(f.retryForever),
		})
		if err != nil {
			ln.Close()
			return exitCode(2, err)
		}
		servedBy = func() string {
			if r, ok := mon.Registered(); ok {
				return r.ID
			}
			return addr
		}
		handler = mon.Handler(backend.NewPrime(servedBy))
	} else {
		handler = backend.NewPrime(servedBy)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	return awaitStop(ctx, stdout, addr, mon, log, serveErr, srv.Shutdown) // backend_counter.go
}
