package monitor

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/giop/ior"
	"github.com/fulcrum-lb/fulcrum/protocol"
)

// LoadSource names what a monitor reports as its load.
type LoadSource string

// Load sources.
const (
	// LoadRate is the call rate in calls/s over the last report interval:
	// the load of the TAO paper's experiments and of TAO's requests-per-second
	// monitor. The default.
	LoadRate LoadSource = "rate"
	// LoadInflight is the number of calls in flight: the larger of the
	// count at report time and the average concurrency over the interval
	// (the summed latency of the calls that finished, divided by its length).
	LoadInflight LoadSource = "inflight"
	// LoadCPU is the process's CPU use over the interval as a share (0–1) of
	// the cores it may use (Options.CPUs). Where the platform offers no
	// process CPU time the load is 0.
	LoadCPU LoadSource = "cpu"
	// LoadLatency is the latency EWMA in milliseconds.
	LoadLatency LoadSource = "latency"
)

// DefaultInterval is the report interval until the balancer says otherwise.
const DefaultInterval = 500 * time.Millisecond

// DefaultTopClients is how many of the busiest bound clients a report lists.
const DefaultTopClients = 64

// DefaultPullPath is where the middleware answers the balancer's pulls when
// Options.PullURL is not set.
const DefaultPullPath = "/fulcrum/report"

// minInterval bounds how often a monitor reports, whatever it is told.
const minInterval = 10 * time.Millisecond

// Options configure a Monitor. The zero value of every field but the ones a
// registration needs (Admin, Group, Address) is a usable default.
type Options struct {
	// Admin is the balancer's admin API base URL, e.g.
	// "http://127.0.0.1:7070". Needed (or Admins) to register and to push
	// reports.
	Admin string
	// Admins are more admin API base URLs of the same balancer (the
	// instances of a cluster), tried after Admin, in order. The monitor
	// reports to one; when it cannot be reached, does not answer in time
	// or answers 5xx, the monitor tries the next. A 307 from /v1/report is
	// followed by the monitor itself (never by HTTPClient, which would drop
	// the token across hosts): it sends the same report with its token to
	// the Location and keeps reporting there until that fails, then tries
	// the list again. Registration and deregistration go to the first URL
	// that answers. Duplicates are dropped.
	Admins []string
	// Group is the group the replica joins.
	Group string
	// Address is the replica's public base URL, the one clients are
	// redirected to, e.g. "http://10.0.0.5:9001"; for a GIOP replica, its
	// object reference ("IOR:..." or "corbaloc:iiop:..."); for a TCP
	// replica (TCP set), its HOST:PORT.
	Address string
	// TCP says the replica is a tcp group's: Address is HOST:PORT, and
	// pull mode needs PullURL.
	TCP bool
	// Token is the replica's token when it was registered out of band (by
	// an operator, with fulcrum ctl). With a Token the monitor does not
	// register at Start and does not deregister at Close; it re-registers
	// only if the balancer rejects the token and Group and Address are set.
	Token string
	// JoinToken is the admin or join token sent when registering. Empty
	// when the balancer's admin API needs none.
	JoinToken string
	// FrontDoor is the group's public front door URL that rebind redirects
	// point to (for a GIOP group, its reference: "corbaloc:iiop:..." or
	// "IOR:..."). Default: the front_door the balancer answers the
	// registration with. Needed with Token, since then nothing registers.
	FrontDoor string
	// Weight is the replica's relative capacity; 0 lets the balancer apply
	// its default (1).
	Weight float64
	// Mode is protocol.MonitorPush (default: the monitor POSTs a report
	// every interval) or protocol.MonitorPull (the balancer GETs PullURL).
	Mode string
	// PullURL is the URL the balancer GETs in pull mode. Default: Address +
	// DefaultPullPath. The middleware answers GETs to its path; PullHandler
	// serves it anywhere else.
	PullURL string
	// Load is what is reported as the load. Default LoadRate. Leave it
	// empty when LoadFunc is set.
	Load LoadSource
	// LoadFunc, when set, supplies the load (in the group's unit) at every
	// report. It must be safe to call from another goroutine. NaN, infinite
	// and negative values are reported as 0.
	LoadFunc func() float64
	// CPUs is the cores the process may use: the cpu metric (and the load
	// with LoadCPU) is its CPU time over the interval's length times CPUs.
	// Default: the CPU limit of the process's cgroup (the lowest quota on
	// its path, v1 cpu.cfs_quota_us / cpu.cfs_period_us or v2 cpu.max,
	// read again at every report) where that is below GOMAXPROCS, else
	// GOMAXPROCS. Set it where the cgroup file system is not visible (a
	// process started by "ip netns exec" does not see it), or to report
	// against another capacity. Range (0, 1000000].
	CPUs float64
	// Interval is the report interval until the balancer's first answer;
	// after that the balancer's report_interval is adopted from every
	// registration and advisory. Default DefaultInterval. In pull mode a
	// non-zero Interval is sent to the balancer as the pull interval.
	Interval time.Duration
	// TopClients is how many of the busiest bound clients a report lists,
	// at most protocol.MaxReportClients. Default DefaultTopClients.
	TopClients int
	// HTTPClient talks to the admin API. Default: a client with a 10s
	// timeout. The monitor follows /v1/report's redirects itself, whatever
	// its CheckRedirect says.
	HTTPClient *http.Client
	// Logger receives the monitor's logs. Default slog.Default().
	Logger *slog.Logger
	// Clock is the monitor's time source. Default the system clock. Tests
	// inject a fake one.
	Clock Clock
	// RegisterAttempts bounds the registrations the balancer may refuse
	// (401: no join token or a wrong one; 403: the address is blocked)
	// before the monitor gives up: it then logs an error, closes Failed and
	// Err returns the refusal. The first refusal is logged as an error at
	// once, naming the missing token. Default DefaultRegisterAttempts;
	// negative: keep trying forever. Other failures (the balancer not
	// reachable yet, a 5xx) are retried forever whatever it says.
	RegisterAttempts int
	// Worker makes the monitor one worker's of a multi-process replica
	// (gunicorn-style workers, or a Go server forked per core): every
	// worker of the replica runs its own monitor with the same Address
	// and Count and its own Index. It is sent in the registration and in
	// every report; the workers share the replica's id and token and the
	// balancer combines their reports (docs/api.md "Multi-process
	// replicas"). Under a high advisory that names clients, the monitor
	// sends back only the clients it owns (protocol.WorkerOf(client,
	// Count) == Index), so that each is sent back once; the first call of
	// a named client it does not own (once per advisory) runs and is
	// answered with "Connection: close", so that a client keeping one
	// connection to this worker reaches another one, its owner among
	// them, with its next call. A worker does not
	// deregister the replica at Close: it is its siblings' too. Push mode
	// only; nil for a single-process replica.
	Worker *protocol.Worker
}

// DefaultRegisterAttempts is how many refused registrations a monitor
// takes before it gives up, unless Options.RegisterAttempts says
// otherwise.
const DefaultRegisterAttempts = 5

// Clock is the monitor's source of time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ErrInvalidOptions is wrapped by every error New returns for bad Options.
var ErrInvalidOptions = errors.New("monitor: invalid options")

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
}

// withDefaults validates o and returns it with defaults applied.
func (o Options) withDefaults() (Options, error) {
	o.Admin = strings.TrimRight(o.Admin, "/")
	o.FrontDoor = strings.TrimRight(o.FrontDoor, "/")
	if o.Admin != "" {
		if err := checkBaseURL(o.Admin); err != nil {
			return o, invalid("Admin", "%q: %v", o.Admin, err)
		}
	}
	admins := make([]string, 0, 1+len(o.Admins))
	if o.Admin != "" {
		admins = append(admins, o.Admin)
	}
	for i, a := range o.Admins {
		a = strings.TrimRight(a, "/")
		if err := checkBaseURL(a); err != nil {
			return o, invalid(fmt.Sprintf("Admins[%d]", i), "%q: %v", o.Admins[i], err)
		}
		if !slices.Contains(admins, a) {
			admins = append(admins, a)
		}
	}
	o.Admins = admins
	if o.Admin == "" && len(admins) > 0 {
		o.Admin = admins[0]
	}
	if o.Address != "" && o.TCP {
		if err := checkHostPort(o.Address); err != nil {
			return o, invalid("Address", "%q: %v", o.Address, err)
		}
	} else if o.Address != "" {
		if err := checkAddress(o.Address); err != nil {
			return o, invalid("Address", "%q: %v", o.Address, err)
		}
	}
	if o.FrontDoor != "" {
		if err := checkAddress(o.FrontDoor); err != nil {
			return o, invalid("FrontDoor", "%q: %v", o.FrontDoor, err)
		}
	}
	switch o.Mode {
	case "":
		o.Mode = protocol.MonitorPush
	case protocol.MonitorPush, protocol.MonitorPull:
	default:
		return o, invalid("Mode", "%q: must be %q or %q", o.Mode, protocol.MonitorPush, protocol.MonitorPull)
	}
	if o.Token == "" {
		// The monitor registers itself.
		if o.Admin == "" || o.Group == "" || o.Address == "" {
			return o, invalid("Admin (or Admins), Group and Address", "are required to register (or give Token)")
		}
	}
	if o.Mode == protocol.MonitorPush && o.Admin == "" {
		return o, invalid("Admin (or Admins)", "is required in push mode")
	}
	if o.Mode == protocol.MonitorPull {
		if o.PullURL == "" && o.Address != "" {
			if isObjectReference(o.Address) || o.TCP {
				return o, invalid("PullURL", "is required in pull mode when Address is an object reference or a HOST:PORT")
			}
			o.PullURL = strings.TrimRight(o.Address, "/") + DefaultPullPath
		}
		if o.PullURL != "" {
			if _, err := url.Parse(o.PullURL); err != nil {
				return o, invalid("PullURL", "%q: %v", o.PullURL, err)
			}
		}
	}
	switch {
	case o.LoadFunc != nil && o.Load != "":
		return o, invalid("Load", "%q: leave it empty when LoadFunc is set", o.Load)
	case o.LoadFunc != nil:
	case o.Load == "":
		o.Load = LoadRate
	case o.Load == LoadRate, o.Load == LoadInflight, o.Load == LoadCPU, o.Load == LoadLatency:
	default:
		return o, invalid("Load", "%q: must be %q, %q, %q or %q", o.Load, LoadRate, LoadInflight, LoadCPU, LoadLatency)
	}
	if o.Weight < 0 || o.Weight > 1e6 || o.Weight != o.Weight {
		return o, invalid("Weight", "%v: must be in [0, 1000000]", o.Weight)
	}
	if o.Interval < 0 {
		return o, invalid("Interval", "%v: must not be negative", o.Interval)
	}
	if o.CPUs < 0 || o.CPUs > 1e6 || o.CPUs != o.CPUs {
		return o, invalid("CPUs", "%v: must be in (0, 1000000], or 0 for the cgroup's limit or GOMAXPROCS", o.CPUs)
	}
	if o.TopClients < 0 || o.TopClients > protocol.MaxReportClients {
		return o, invalid("TopClients", "%d: must be in [0, %d]", o.TopClients, protocol.MaxReportClients)
	}
	if o.TopClients == 0 {
		o.TopClients = DefaultTopClients
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.RegisterAttempts == 0 {
		o.RegisterAttempts = DefaultRegisterAttempts
	}
	if o.Worker != nil {
		if err := o.Worker.Validate(); err != nil {
			return o, invalid("Worker", "%v", err)
		}
		if o.Mode != protocol.MonitorPush {
			return o, invalid("Worker", "is only allowed in push mode (each worker pushes its own reports)")
		}
		w := *o.Worker // the caller's may change
		o.Worker = &w
	}
	return o, nil
}

// checkAddress accepts what clients reach a replica or a front door by: an
// absolute http(s) URL without query or fragment, or, for GIOP, an object
// reference ("IOR:..." or "corbaloc:iiop:...").
func checkAddress(s string) error {
	if isObjectReference(s) {
		_, err := ior.Parse(s)
		return err
	}
	return checkBaseURL(s)
}

// checkHostPort accepts a TCP replica's address, HOST:PORT with a host
// and a port in [1, 65535].
func checkHostPort(s string) error {
	h, p, err := net.SplitHostPort(s)
	if err != nil || h == "" {
		return errors.New("must be HOST:PORT, the address the replica accepts connections on")
	}
	if port, err := strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
		return errors.New("must be HOST:PORT with a port in [1, 65535]")
	}
	return nil
}

// isObjectReference reports whether s is written as a CORBA object
// reference rather than a URL.
func isObjectReference(s string) bool {
	for _, p := range []string{"IOR:", "corbaloc:"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// checkBaseURL accepts an absolute http(s) URL without query or fragment.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("must have no query or fragment")
	}
	return nil
}
