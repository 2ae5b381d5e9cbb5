package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fleet runs the prime replicas as child processes and restarts one that
// dies (kill -9 it to watch its clients rebind and it come back).
type fleet struct {
	exe, admin string
	out, log   io.Writer
	// giop runs Go Prime servants over GIOP (backend prime --giop),
	// whose addresses are their IORs.
	giop bool

	mu      sync.Mutex
	procs   map[int]*exec.Cmd
	addrs   map[int]string
	pending []string
	stopped bool
	wg      sync.WaitGroup
}

func newFleet(exe, admin string, out, log io.Writer) *fleet {
	return &fleet{exe: exe, admin: admin, out: out, log: log, procs: map[int]*exec.Cmd{}, addrs: map[int]string{}}
}

// start starts replica i (on its earlier address if it had one) and waits
// for its "listening on" line.
func (f *fleet) start(ctx context.Context, i int) error {
	f.mu.Lock()
	listen := "127.0.0.1:0"
	if a, ok := f.addrs[i]; ok {
		listen = listenAddr(a)
	}
	f.mu.Unlock()
	args := []string{"backend", "prime", "--listen", listen, "--register", f.admin, "--group", "prime"}
	if f.giop {
		args = append(args, "--giop")
	}
	cmd := exec.Command(f.exe, args...)
	cmd.Stderr = f.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("demo: starting replica: %w", err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var addr string
	select {
	case line, ok := <-lines:
		addr, _ = strings.CutPrefix(line, "listening on ")
		if !ok || addr == line {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("demo: replica %d did not start (run %q backend prime to see why)", i+1, f.exe)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("demo: replica %d did not say where it listens within 10s", i+1)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return ctx.Err()
	}
	f.mu.Lock()
	_, restart := f.procs[i]
	f.procs[i] = cmd
	f.addrs[i] = addr
	f.mu.Unlock()
	line := fmt.Sprintf("replica %d: pid %d, %s", i+1, cmd.Process.Pid, addr)
	if restart {
		f.note(line) // printed after the line saying it exited
	} else {
		fmt.Fprintln(f.out, line)
	}
	f.wg.Add(1)
	go f.wait(ctx, i, cmd)
	return nil
}

// wait restarts replica i if it exits while the fleet runs.
func (f *fleet) wait(ctx context.Context, i int, cmd *exec.Cmd) {
	defer f.wg.Done()
	err := cmd.Wait()
	f.mu.Lock()
	stopped := f.stopped
	if !stopped {
		f.pending = append(f.pending, fmt.Sprintf("replica %d (pid %d) exited (%v); restarting it on %s", i+1, cmd.Process.Pid, err, f.addrs[i]))
	}
	f.mu.Unlock()
	if stopped || ctx.Err() != nil {
		return
	}
	for attempt := 0; attempt < 20; attempt++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		if err := f.start(ctx, i); err == nil {
			return
		} else {
			f.note(fmt.Sprintf("restarting replica %d failed: %v", i+1, err))
		}
	}
}

func (f *fleet) note(s string) {
	f.mu.Lock()
	f.pending = append(f.pending, s)
	f.mu.Unlock()
}

// events returns and clears what happened to the fleet since last asked.
func (f *fleet) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ev := f.pending
	f.pending = nil
	return ev
}

// stopAll stops every replica: SIGTERM (they deregister), then SIGKILL
// after 5s.
func (f *fleet) stopAll() {
	f.mu.Lock()
	f.stopped = true
	procs := make([]*exec.Cmd, 0, len(f.procs))
	for _, p := range f.procs {
		procs = append(procs, p)
	}
	f.mu.Unlock()
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		for _, p := range procs {
			_ = p.Process.Kill()
		}
		<-done
	}
}
