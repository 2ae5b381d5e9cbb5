package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/cgroupcpu"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary a helper process: "serve ADDR" serves
// HTTP on ADDR (/ns: its network namespace; /cgroup: its cgroups;
// /quota: the CPU quota it finds for itself and whether it can read the
// usage of the cgroup that sets it; /blob/N: N bytes); "spin D" spins
// until it has used D of CPU time, then exits.
const helperEnv = "FULCRUM_TESTBED_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "serve":
		serve(os.Args[1])
		return
	case "spin":
		spin(os.Args[1])
		return
	}
	goleak.VerifyTestMain(m)
}

// spin burns CPU until the process has used the duration arg of it.
func spin(arg string) {
	d, err := time.ParseDuration(arg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for x := uint64(1); ; x++ {
		x ^= x << 13 // work the compiler cannot drop
		if x%(1<<16) != 0 {
			continue
		}
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
			return
		}
	}
}

func serve(addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ns", func(w http.ResponseWriter, _ *http.Request) {
		ns, _ := os.Readlink("/proc/self/ns/net")
		io.WriteString(w, ns)
	})
	mux.HandleFunc("GET /cgroup", func(w http.ResponseWriter, _ *http.Request) {
		b, _ := os.ReadFile("/proc/self/cgroup")
		w.Write(b)
	})
	mux.HandleFunc("GET /quota", func(w http.ResponseWriter, _ *http.Request) {
		cores, acct, ok := cgroupcpu.FindSelf().Limit()
		_, err := cgroupcpu.Usage(acct)
		fmt.Fprintf(w, "%g %v %v", cores, ok, err == nil)
	})
	mux.HandleFunc("GET /blob/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 {
			http.Error(w, "bad size", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(make([]byte, n))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening") // startServer waits for this line
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// needTestbed fails the test when the testbed cannot run here and CI is
// set, and skips it otherwise.
func needTestbed(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testbed unavailable in CI: %v", err)
		}
		t.Skipf("testbed unavailable: %v", err)
	}
}

func newTestbed(t *testing.T) *Testbed {
	t.Helper()
	needTestbed(t)
	tb, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return tb
}

// startServer starts the HTTP helper in r, listening on r's address,
// waits until it says it is listening, and checks that the root
// namespace gets an answer.
func startServer(t *testing.T, r *Replica) string {
	t.Helper()
	addr := net.JoinHostPort(r.Addr().String(), "8080")
	cmd := exec.Command(os.Args[0], addr)
	cmd.Env = append(os.Environ(), helperEnv+"=serve")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The first line, or the pipe's end when the server exits first;
	// killing the server (the cleanup) ends the read.
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	select {
	case l := <-line:
		if l != "listening\n" {
			t.Fatalf("the server in replica %s said %q, want listening", r.Name(), l)
		}
	case <-ctx.Done():
		t.Fatalf("the server in replica %s did not listen within 15s", r.Name())
	}
	base := "http://" + addr
	if _, err := get(ctx, base+"/ns"); err != nil {
		t.Fatalf("the server in replica %s does not answer at %s: %v", r.Name(), base, err)
	}
	return base
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), nil
}

func TestReplicaReachableInItsNamespaceAndCgroup(t *testing.T) {
	tb := newTestbed(t)
	r1, err := tb.AddReplica(ReplicaSpec{CPU: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := tb.AddReplica(ReplicaSpec{CPU: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Addr() == r2.Addr() {
		t.Fatalf("two replicas share the address %v", r1.Addr())
	}
	rootNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{rootNS: true}
	for _, r := range []*Replica{r1, r2} {
		base := startServer(t, r)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ns, err := get(ctx, base+"/ns")
		if err != nil {
			t.Fatal(err)
		}
		if seen[ns] {
			t.Errorf("replica %s's server runs in network namespace %s, not one of its own", r.Name(), ns)
		}
		seen[ns] = true
		// The program sees its cgroups (nsenter leaves /sys/fs/cgroup
		// visible): its quota, and the usage of the cgroup that sets it.
		quota, err := get(ctx, base+"/quota")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%g true true", r.CPU()); quota != want {
			t.Errorf("replica %s's server finds its quota and accounting as %q, want %q", r.Name(), quota, want)
		}
		cg, err := get(ctx, base+"/cgroup")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cg, cgroupParent+"/"+r.Name()+"\n") {
			t.Errorf("replica %s's server is not in its cgroup:\n%s", r.Name(), cg)
		}
		if pids := r.Pids(); len(pids) != 1 {
			t.Errorf("replica %s's cgroup holds %v, want the server alone", r.Name(), pids)
		}
	}
}

// cpuRate measures the replica's CPU use, in cores, from now until a
// process started in clock (the window's metronome) has used work of CPU
// time and exited: the window is a real event, and its length is set by
// clock's share of the CPU.
func cpuRate(t *testing.T, r, clock *Replica, work time.Duration) float64 {
	t.Helper()
	u0, err := r.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command(os.Args[0], work.String())
	cmd.Env = append(os.Environ(), helperEnv+"=spin")
	cmd.Stderr = os.Stderr
	if err := clock.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the metronome in replica %s: %v", clock.Name(), err)
	}
	u1, err := r.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	return (u1 - u0).Seconds() / time.Since(start).Seconds()
}

func TestCPUQuotaLimitsTheReplica(t *testing.T) {
	tb := newTestbed(t)
	const quota = 0.3
	r, err := tb.AddReplica(ReplicaSpec{CPU: quota})
	if err != nil {
		t.Fatal(err)
	}
	// Two spinning processes could take two cores without the quota.
	for range 2 {
		h, err := r.StartHog()
		if err != nil {
			t.Fatal(err)
		}
		defer h.Stop()
	}
	// The metronome shares the quota with the hogs (a third of it):
	// 150 ms of CPU at 0.1 cores make a window of about 1.5 s.
	got := cpuRate(t, r, r, 150*time.Millisecond)
	// Above the quota: it does not hold. Well below: the hogs did not
	// run (the machine is shared, so the lower bound is generous).
	if got > quota*1.2 || got < quota*0.4 {
		t.Errorf("two hogs in a replica with %.2f cores used %.3f cores", quota, got)
	}
	weightFile, want := "cpu.shares", strconv.Itoa(replicaShares)
	if tb.cg.v2 {
		weightFile, want = "cpu.weight", strconv.Itoa(replicaWeight)
	}
	if b, err := os.ReadFile(filepath.Join(r.cg.cpuDir(), weightFile)); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("%s = %q (%v), want %s", weightFile, b, err, want)
	}
	periods, _, err := r.Throttled()
	if err != nil {
		t.Fatal(err)
	}
	if periods == 0 {
		t.Error("the replica was never throttled with two hogs spinning")
	}
	t.Logf("%.3f cores used with a quota of %.2f; throttled in %d periods", got, quota, periods)
}

func TestHogStops(t *testing.T) {
	tb := newTestbed(t)
	r, err := tb.AddReplica(ReplicaSpec{CPU: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.StartHog()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Pids(), h.Pid()) {
		t.Fatalf("hog %d not in the replica's cgroup %v", h.Pid(), r.Pids())
	}
	h.Stop()
	if pids := r.Pids(); len(pids) != 0 {
		t.Fatalf("processes left in the replica after the hog stopped: %v", pids)
	}
	// The window: 60 ms of CPU in a replica with 0.2 cores, 300 ms or more.
	clock, err := tb.AddReplica(ReplicaSpec{CPU: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuRate(t, r, clock, 60*time.Millisecond); got > 0.05 {
		t.Errorf("an idle replica used %.3f cores", got)
	}
}

// download fetches n bytes from base and returns the throughput in
// bytes per second.
func download(t *testing.T, base string, n int) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	body, err := get(ctx, base+"/blob/"+strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != n {
		t.Fatalf("got %d bytes, want %d", len(body), n)
	}
	return float64(n) / time.Since(start).Seconds()
}

func TestLinkShapingLimitsThroughput(t *testing.T) {
	tb := newTestbed(t)
	shaped, err := tb.AddReplica(ReplicaSpec{CPU: 0.4, Link: &Link{Rate: "4mbit", Burst: "10kb", Latency: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	free, err := tb.AddReplica(ReplicaSpec{CPU: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	const rate = 4e6 / 8 // bytes/s
	const size = 256 << 10
	got := download(t, startServer(t, shaped), size)
	if got > rate*1.3 || got < rate*0.3 {
		t.Errorf("through a %g B/s link: %.0f B/s", rate, got)
	}
	unshaped := download(t, startServer(t, free), size)
	if unshaped < 5*rate {
		t.Errorf("unshaped replica: %.0f B/s, want well above the shaped %g B/s", unshaped, rate)
	}
	t.Logf("shaped %.0f B/s (rate %g), unshaped %.0f B/s", got, rate, unshaped)
}

// leftovers lists what exists of replica name: its namespace, veth and
// cgroup directories.
func leftovers(tb *Testbed, name string) []string {
	var left []string
	if netnsExists(name) {
		left = append(left, "netns "+name)
	}
	if linkExists(hostVeth(name)) {
		left = append(left, "link "+hostVeth(name))
	}
	for _, d := range (cgroup{fs: tb.cg, name: name}).dirs() {
		if _, err := os.Stat(d); err == nil {
			left = append(left, "cgroup "+d)
		}
	}
	return left
}

func TestCloseRemovesEverything(t *testing.T) {
	needTestbed(t)
	tb, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := tb.AddReplica(ReplicaSpec{CPU: 0.3, Link: &Link{Rate: "1mbit", Burst: "2kb", Latency: 10 * time.Millisecond, Both: true}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := tb.AddReplica(ReplicaSpec{CPU: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.StartHog(); err != nil {
		t.Fatal(err)
	}
	// A process started by someone else (Wrap) is killed too.
	sleeper := exec.Command("sleep", "600")
	if err := r2.Wrap(sleeper); err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(exited) }()
	for _, r := range []*Replica{r1, r2} {
		if left := leftovers(tb, r.Name()); len(left) != 2+len(r.cg.dirs()) {
			t.Fatalf("replica %s: %v, want netns, link and cgroup", r.Name(), left)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a process of the replica outlived Close")
	}
	for _, r := range []*Replica{r1, r2} {
		if left := leftovers(tb, r.Name()); len(left) != 0 {
			t.Errorf("after Close: %v", left)
		}
	}
	if _, err := tb.AddReplica(ReplicaSpec{CPU: 0.3}); err == nil {
		t.Error("AddReplica after Close succeeded")
	}
}

// makeLeftover builds what a testbed of process pid leaves when it dies:
// a namespace, a veth pair and a cgroup, with a process in the cgroup.
// It returns the name and the process.
func makeLeftover(t *testing.T, tb *Testbed, pid int) (string, *exec.Cmd) {
	t.Helper()
	name := replicaName(pid, 1)
	cg := cgroup{fs: tb.cg, name: name}
	if err := cg.create(5*time.Millisecond, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := run(tb.tools.ip, "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	if _, err := run(tb.tools.ip, "link", "add", hostVeth(name), "type", "veth", "peer", "name", peerVeth(name), "netns", name); err != nil {
		t.Fatal(err)
	}
	r := &Replica{tb: tb, name: name, cg: cg}
	proc := exec.Command("sleep", "600")
	if err := r.Wrap(proc); err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.waitJoined(proc.Process.Pid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tb.removeReplica(name) })
	return name, proc
}

func TestNewSweepsOnlyDeadOwnersLeftovers(t *testing.T) {
	tb := newTestbed(t)
	// A dead owner: a process that has exited and been reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// A live owner: another process, still running.
	live := exec.Command("sleep", "600")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	liveExited := make(chan struct{})
	go func() { _ = live.Wait(); close(liveExited) }()
	defer func() { _ = live.Process.Kill(); <-liveExited }()

	deadName, deadProc := makeLeftover(t, tb, dead.Process.Pid)
	liveName, _ := makeLeftover(t, tb, live.Process.Pid)
	deadProcExited := make(chan struct{})
	go func() { _ = deadProc.Wait(); close(deadProcExited) }()

	tb2, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb2.Close()
	if left := leftovers(tb, deadName); len(left) != 0 {
		t.Errorf("a dead owner's leftovers survived New: %v", left)
	}
	select {
	case <-deadProcExited:
	case <-time.After(10 * time.Second):
		t.Error("a process in a dead owner's cgroup survived New")
	}
	if left := leftovers(tb, liveName); len(left) != 2+len((cgroup{fs: tb.cg, name: liveName}).dirs()) {
		t.Errorf("a live owner's replica was touched: only %v is left", left)
	}
	// Once its owner dies, the next New removes it.
	_ = live.Process.Kill()
	<-liveExited
	tb3, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb3.Close()
	if left := leftovers(tb, liveName); len(left) != 0 {
		t.Errorf("after its owner died: %v", left)
	}
}

func TestSpecErrors(t *testing.T) {
	t.Parallel()
	link := func(rate, burst string, lat time.Duration) *Link {
		return &Link{Rate: rate, Burst: burst, Latency: lat}
	}
	tests := []struct {
		name string
		used float64
		spec ReplicaSpec
		want string
	}{
		{"no CPU", 0, ReplicaSpec{}, "CPU 0: must be > 0"},
		{"negative CPU", 0, ReplicaSpec{CPU: -1}, "CPU -1: must be > 0"},
		{"below the kernel's minimum quota", 0, ReplicaSpec{CPU: 0.05}, "minimum is 1ms"},
		{"sum reaches the cores", 1.5, ReplicaSpec{CPU: 0.5}, "would sum to 2 cores, must stay below the machine's 2"},
		{"rate without unit", 0, ReplicaSpec{CPU: 0.5, Link: link("500", "2kb", time.Millisecond)}, `link rate "500"`},
		{"zero rate", 0, ReplicaSpec{CPU: 0.5, Link: link("0kbit", "2kb", time.Millisecond)}, `link rate "0kbit": must be > 0`},
		{"bad burst", 0, ReplicaSpec{CPU: 0.5, Link: link("1mbit", "2 kb", time.Millisecond)}, `link burst "2 kb"`},
		{"no latency", 0, ReplicaSpec{CPU: 0.5, Link: link("1mbit", "2kb", 0)}, "link latency 0s: must be > 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No system call happens before these checks, so the testbed
			// needs no root here.
			tb := &Testbed{opts: Options{CPUPeriod: DefaultCPUPeriod, Cores: 2}, cpuSum: tc.used}
			_, err := tb.AddReplica(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AddReplica(%+v) = %v, want an error with %q", tc.spec, err, tc.want)
			}
			if tb.cpuSum != tc.used {
				t.Errorf("a refused replica changed the quota sum to %g", tb.cpuSum)
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{CPUPeriod: time.Microsecond}, {CPUPeriod: 2 * time.Second}, {Cores: -1}} {
		if _, err := New(o); err == nil || errors.Is(err, ErrNotRoot) {
			t.Errorf("New(%+v) = %v, want an option error", o, err)
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	name := replicaName(4194304, 999)
	for _, n := range []string{hostVeth(name), peerVeth(name)} {
		if len(n) > 15 {
			t.Errorf("interface name %s is longer than 15 characters", n)
		}
		if pid, ok := ownerOf(n); !ok || pid != 4194304 {
			t.Errorf("ownerOf(%s) = %d, %v", n, pid, ok)
		}
	}
	for _, n := range []string{"eth0", "fbxr1", "fb12r", "fb12r1x", "fb0r1"} {
		if pid, ok := ownerOf(n); ok {
			t.Errorf("ownerOf(%s) = %d, want not a testbed name", n, pid)
		}
	}
	if !alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
}
