package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stopGrace bounds how long a process may take to exit after SIGTERM before
// its whole process group gets SIGKILL.
const stopGrace = 10 * time.Second

// process is one child process in its own process group, writing stdout and
// stderr to a log file. Pdeathsig makes the kernel kill it when the test
// process dies without cleaning up, so a crashed run leaves nothing behind.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	// spec is what started it, so an outage can be ended by starting it again.
	spec processSpec

	mu    sync.Mutex
	state *os.ProcessState
}

type processSpec struct {
	name    string
	argv    []string
	env     []string
	dir     string
	logPath string
}

func startProcess(spec processSpec) (*process, error) {
	logFile, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The child holds its own descriptor; ours is not needed after Start.
	defer func() { _ = logFile.Close() }()
	fmt.Fprintf(logFile, "=== %s starting %s: %q\n", time.Now().Format(time.RFC3339Nano), spec.name, spec.argv)

	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Env = spec.env
	cmd.Dir = spec.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	p := &process{name: spec.name, logPath: spec.logPath, cmd: cmd, started: started, done: make(chan struct{}), spec: spec}
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exitCode reports the exit code the way a container runtime does: 128+n when
// the process died of signal n.
func (p *process) exitCode() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return 0, false
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return p.state.ExitCode(), true
}

func (p *process) wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		code, _ := p.exitCode()
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalGroup signals the whole process group, so helpers a binary spawned
// go down with it.
func (p *process) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-p.pid(), sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// kill is kill -9 on the group; it returns once the process is reaped.
func (p *process) kill() error {
	if err := p.signalGroup(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// stop asks politely, then insists. It is safe to call on an exited process:
// the group may still hold children, which the final SIGKILL ends.
func (p *process) stop() error {
	if !p.exited() {
		if err := p.signalGroup(syscall.SIGTERM); err != nil {
			return err
		}
		select {
		case <-p.done:
		case <-time.After(stopGrace):
		}
	}
	return p.kill()
}

// stopAll stops processes concurrently: teardown time is the slowest one, not
// the sum.
func stopAll(procs []*process) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.stop(); err != nil {
				errs[i] = fmt.Errorf("stop %s (pid %d): %w", p.name, p.pid(), err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
