package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a process an experiment started, in a process group of its own
// whose members get SIGKILL if the bench dies.
type Proc struct {
	// Name names the process in logs and errors.
	Name string
	// Log is the file its output goes to.
	Log string

	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited
	err    error         // Wait's error, read after exited
}

// ProcSpec is what to start.
type ProcSpec struct {
	Name string
	Path string
	Args []string
	Dir  string
	// Stdin, when set, is the process's standard input.
	Stdin *os.File
	// Stdout, when set, receives the process's standard output instead
	// of the log file (stderr still goes to the log).
	Stdout io.Writer
	// FirstLine, when set, receives the first line of standard output;
	// the rest goes to the log.
	FirstLine chan<- string
	// Wrap, when set, rewrites the command before it starts (a testbed
	// replica's Wrap: its network namespace and cgroup).
	Wrap func(*exec.Cmd) error
	// Env are variables ("KEY=value") added to the bench's environment
	// (a failpoint's GOFAIL_FAILPOINTS).
	Env []string
}

// Start starts a process and tracks it for Close. s.Name must be unique
// in the environment (UniqueName).
func (e *Env) Start(s ProcSpec) (*Proc, error) {
	name := s.Name
	logPath := filepath.Join(e.Dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor once started
	fmt.Fprintf(logFile, "# %s %s\n", s.Path, strings.Join(s.Args, " "))
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	if len(s.Env) > 0 {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	if s.Wrap != nil {
		if err := s.Wrap(cmd); err != nil {
			return nil, fmt.Errorf("bench: starting %s: %w", name, err)
		}
	}
	cmd.Stderr = logFile
	cmd.Stdout = logFile
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	}
	var pipeR *os.File
	switch {
	case s.Stdout != nil:
		cmd.Stdout = s.Stdout
	case s.FirstLine != nil:
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer w.Close()
		cmd.Stdout, pipeR = w, r
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if pipeR != nil {
			pipeR.Close()
		}
		return nil, fmt.Errorf("bench: starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: logPath, cmd: cmd, exited: make(chan struct{})}
	if pipeR != nil {
		logCopy, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			logCopy = nil
		}
		go func() {
			defer pipeR.Close()
			sc := bufio.NewScanner(pipeR)
			first := true
			for sc.Scan() {
				if first {
					s.FirstLine <- sc.Text()
					first = false
				}
				if logCopy != nil {
					fmt.Fprintln(logCopy, sc.Text())
				}
			}
			if first {
				close(s.FirstLine)
			}
			if logCopy != nil {
				logCopy.Close()
			}
		}()
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := e.track(p); err != nil {
		p.Stop(0)
		return nil, err
	}
	return p, nil
}

// Pid is the process id (and its process group's).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is why the process exited; call it after Exited is closed.
func (p *Proc) Err() error { return p.err }

// died describes a process that exited when it should not have.
func (p *Proc) died() error {
	return fmt.Errorf("bench: %s exited (%v); see %s", p.Name, p.err, p.Log)
}

// Stop sends SIGTERM to the process group, waits up to grace for the
// process to exit, then kills the whole group with SIGKILL. A process
// that already exited is left alone: its group id may be reused by now
// (the bench's processes start no children of their own).
func (p *Proc) Stop(grace time.Duration) {
	pgid := p.Pid()
	select {
	case <-p.exited:
		return
	default:
	}
	if grace > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
}

// WaitExit waits until every process in ps has exited, killing those
// still running when ctx ends.
func WaitExit(ctx context.Context, ps []*Proc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			select {
			case <-p.exited:
			case <-ctx.Done():
				p.Stop(0)
			}
		})
	}
	wg.Wait()
}

// WaitLine waits for the first line of a process started with FirstLine
// and returns what follows prefix in it.
func WaitLine(ctx context.Context, p *Proc, lines <-chan string, prefix string, within time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	select {
	case line, ok := <-lines:
		if rest, found := strings.CutPrefix(line, prefix); ok && found {
			return strings.TrimSpace(rest), nil
		}
		if !ok {
			<-p.exited
			return "", p.died()
		}
		return "", fmt.Errorf("bench: %s said %q, want a line starting %q; see %s", p.Name, line, prefix, p.Log)
	case <-ctx.Done():
		return "", fmt.Errorf("bench: %s did not say %q within %s: %w; see %s", p.Name, prefix, within, ctx.Err(), p.Log)
	}
}

// WaitHTTP polls url every 20ms until it answers 200 (true from ok), the
// process exits, or within passes.
func WaitHTTP(ctx context.Context, p *Proc, url string, within time.Duration) error {
	return waitHTTP(ctx, p, url, nil, within)
}

// waitHTTP is WaitHTTP, over TLS with conf when conf is not nil.
func waitHTTP(ctx context.Context, p *Proc, url string, conf *tls.Config, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tr := &http.Transport{DisableKeepAlives: true}
	if conf != nil {
		tr.TLSClientConfig = conf.Clone()
	}
	hc := &http.Client{Timeout: time.Second, Transport: tr}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("status %s", resp.Status)
		} else {
			last = err
		}
		select {
		case <-p.exited:
			return p.died()
		case <-ctx.Done():
			return fmt.Errorf("bench: %s not ready at %s within %s (last: %v); see %s", p.Name, url, within, last, p.Log)
		case <-tick.C:
		}
	}
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for programs that cannot listen on port 0 and say which port they
// got (HAProxy, NGINX, the admin API).
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
