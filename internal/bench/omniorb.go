package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fulcrum-lb/fulcrum/internal/bench/omniorb"
	"github.com/fulcrum-lb/fulcrum/internal/bench/stats"
)

// GIOP runs with --orb omniorb: the replicas are omniORB C++ Prime servers
// (prime_server), each behind a side-car "fulcrum agent giop" that reports
// its load, and the clients are unmodified omniORB C++ client processes
// (prime_client). The programs are built from the sources embedded in
// internal/bench/omniorb, once per source version, into a cache directory.

// omniBuild builds the omniORB programs once per environment.
type omniBuild struct {
	once  sync.Once
	progs *omniorb.Programs
	err   error
}

// omniCacheDir is where the omniORB programs are built: the user's cache
// directory, or the run's output directory when there is none.
func (e *Env) omniCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "fulcrum")
	}
	return filepath.Join(e.Dir, "omniorb")
}

// OmniORB returns the omniORB programs, building them on first use. A
// missing toolchain is an error naming the Debian packages.
func (e *Env) OmniORB(ctx context.Context) (*omniorb.Programs, error) {
	e.omni.once.Do(func() {
		dir := e.omniCacheDir()
		t0 := time.Now()
		e.omni.progs, e.omni.err = omniorb.Cached(ctx, dir)
		if e.omni.err == nil {
			e.Logf("omniORB programs: %s (%.1fs)", e.omni.progs.Dir, time.Since(t0).Seconds())
		}
	})
	return e.omni.progs, e.omni.err
}

// lineProc is a process whose standard output is read line by line: each
// line goes to lines (dropped when nobody has taken the previous ones) and,
// cut to logLineMax bytes, to the process's log.
type lineProc struct {
	*Proc
	lines <-chan string
	stdin *os.File // the write end of its stdin; nil when it has none
}

// logLineMax bounds the lines a lineProc copies into its log (a client's
// summary with every latency is long).
const logLineMax = 300

// startLines starts path with args, its output read by lines; withStdin
// gives it a standard input to write to.
func (e *Env) startLines(name, path string, args []string, withStdin bool) (*lineProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	spec := ProcSpec{Name: e.UniqueName(name), Path: path, Args: args, Stdout: w}
	var inW *os.File
	if withStdin {
		inR, iw, err := os.Pipe()
		if err != nil {
			r.Close()
			w.Close()
			return nil, err
		}
		spec.Stdin, inW = inR, iw
		defer inR.Close()
	}
	p, err := e.Start(spec)
	w.Close()
	if err != nil {
		r.Close()
		if inW != nil {
			inW.Close()
		}
		return nil, err
	}
	lines := make(chan string, 16)
	go func() {
		defer r.Close()
		defer close(lines)
		logf, _ := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND, 0)
		if logf != nil {
			defer logf.Close()
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 256<<20)
		for sc.Scan() {
			line := sc.Text()
			if logf != nil {
				l := line
				if len(l) > logLineMax {
					l = l[:logLineMax] + "..."
				}
				fmt.Fprintln(logf, l)
			}
			select {
			case lines <- line:
			default:
			}
		}
	}()
	return &lineProc{Proc: p, lines: lines, stdin: inW}, nil
}

// nextLine returns the next line starting with prefix (others skipped),
// failing when the process exits or within passes.
func (lp *lineProc) nextLine(ctx context.Context, prefix string, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		select {
		case line, ok := <-lp.lines:
			if !ok {
				<-lp.exited
				return "", lp.died()
			}
			if strings.HasPrefix(line, prefix) {
				return line, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("bench: %s did not write a line starting %q within %s: %w; see %s", lp.Name, prefix, within, ctx.Err(), lp.Log)
		}
	}
}

// OmniServer is a running prime_server.
type OmniServer struct {
	*lineProc
	// IOR is its object's reference.
	IOR string
}

// StartOmniServer starts an omniORB C++ Prime server on a free loopback
// port and returns once it has printed its IOR.
func (e *Env) StartOmniServer(ctx context.Context, progs *omniorb.Programs, name string) (*OmniServer, error) {
	lp, err := e.startLines(name, progs.Server, nil, false)
	if err != nil {
		return nil, err
	}
	ior, err := lp.nextLine(ctx, "IOR:", 20*time.Second)
	if err != nil {
		lp.Stop(0)
		return nil, err
	}
	e.Logf("omniORB server %s: pid %d", lp.Name, lp.Pid())
	return &OmniServer{lineProc: lp, IOR: ior}, nil
}

// OmniAgent is a running "fulcrum agent giop" in front of a server.
type OmniAgent struct {
	*lineProc
	// Ref is the reference it registered (or would register): the
	// server's IOR pointing at the agent.
	Ref string
}

// StartOmniAgent starts a side-car agent in front of the server whose
// reference is target; it registers with join's group and reports the
// server's call rate as its load.
func (e *Env) StartOmniAgent(ctx context.Context, name, target string, join *Join) (*OmniAgent, error) {
	args := []string{"agent", "giop", "--listen", "127.0.0.1:0", "--target", target, "--register", join.Admin, "--group", join.Group}
	lp, err := e.startLines(name, e.Binary, args, false)
	if err != nil {
		return nil, err
	}
	if _, err := lp.nextLine(ctx, "listening on ", 20*time.Second); err != nil {
		lp.Stop(0)
		return nil, err
	}
	ref, err := lp.nextLine(ctx, "reference ", 20*time.Second)
	if err != nil {
		lp.Stop(0)
		return nil, err
	}
	ref = strings.TrimPrefix(ref, "reference ")
	e.Logf("agent %s: pid %d", lp.Name, lp.Pid())
	return &OmniAgent{lineProc: lp, Ref: ref}, nil
}

// omniSummary is a prime_client summary line.
type omniSummary struct {
	Summary   bool             `json:"summary"`
	Calls     int64            `json:"calls"`
	OK        int64            `json:"ok"`
	ElapsedUs int64            `json:"elapsed_us"`
	Errors    map[string]int64 `json:"errors"`
	Latencies []int64          `json:"latencies_us"`
}

// omniLoop is one omniORB C++ client in a closed loop (prime_client
// --interactive --latencies): each Run writes a number of calls to its
// standard input and reads the batch's summary, with every call's latency.
// It implements closedLoop.
type omniLoop struct {
	lp  *lineProc
	ref string
}

// StartOmniLoop starts a closed-loop client of ref calling is_prime(n).
func (e *Env) StartOmniLoop(progs *omniorb.Programs, name, ref string, n int32) (*omniLoop, error) {
	lp, err := e.startLines(name, progs.Client, []string{"--interactive", "--latencies", "--arg", strconv.Itoa(int(n)), ref}, true)
	if err != nil {
		return nil, err
	}
	return &omniLoop{lp: lp, ref: ref}, nil
}

// Run makes calls calls (start and until are not used: the client runs a
// number of calls) and returns what the client measured.
func (l *omniLoop) Run(ctx context.Context, _ time.Time, calls int, _ time.Time) (LoadResult, error) {
	if calls <= 0 {
		return LoadResult{}, errors.New("bench: an omniORB client runs a number of calls")
	}
	if _, err := fmt.Fprintf(l.lp.stdin, "%d\n", calls); err != nil {
		return LoadResult{}, fmt.Errorf("bench: %s: %w; see %s", l.lp.Name, err, l.lp.Log)
	}
	line, err := l.lp.nextLine(ctx, `{"summary"`, time.Minute+time.Duration(calls)*10*time.Millisecond)
	if err != nil {
		return LoadResult{}, err
	}
	var s omniSummary
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		return LoadResult{}, fmt.Errorf("bench: %s: summary %.100q: %w", l.lp.Name, line, err)
	}
	return s.result(), nil
}

// result is the summary as a LoadResult.
func (s omniSummary) result() LoadResult {
	res := LoadResult{Rec: stats.NewRecorder(), Errors: s.Calls - s.OK, Elapsed: time.Duration(s.ElapsedUs) * time.Microsecond}
	for _, us := range s.Latencies {
		res.Rec.Record(time.Duration(us) * time.Microsecond)
	}
	if len(s.Errors) > 0 {
		kinds := make([]string, 0, len(s.Errors))
		for k := range s.Errors {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		res.FirstError = "CORBA " + kinds[0]
	}
	return res
}

// Warm makes n unrecorded calls; it fails when any failed.
func (l *omniLoop) Warm(ctx context.Context, n int) error {
	res, err := l.Run(ctx, time.Time{}, n, time.Time{})
	if err != nil {
		return err
	}
	if res.Errors > 0 {
		return fmt.Errorf("bench: warm-up calls to %.60s: %d of %d failed (%s)", l.ref, res.Errors, n, res.FirstError)
	}
	return nil
}

// Close ends the client (end of its input) and waits for it to exit.
func (l *omniLoop) Close() {
	if l.lp.stdin != nil {
		l.lp.stdin.Close()
	}
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case <-l.lp.exited:
	case <-t.C:
		l.lp.Stop(0)
	}
}
