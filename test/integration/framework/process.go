package framework

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one etcd or kube-apiserver. It can be started again with the
// same arguments after it stopped, which is how the API server restarts on
// its port and data.
type process struct {
	name    string
	path    string
	args    []string
	logPath string
	run     *processRun
}

// processRun is one execution; err is written before done is closed and
// read only after, so no lock is needed.
type processRun struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (p *process) start() error {
	if p.running() {
		return fmt.Errorf("%s is already running (pid %d)", p.name, p.pid())
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// The kernel kills the child when the test process dies, however it
		// dies (panic, timeout, SIGKILL), so no etcd outlives its test.
		// Strictly it fires when the forking OS thread exits; the Go
		// runtime only ends a thread whose goroutine exits while locked
		// to it, so callers must not start servers from such a goroutine.
		Pdeathsig: syscall.SIGKILL,
		// A terminal's Ctrl-C goes to the foreground process group; in our
		// own group the servers are stopped in order by their owner instead
		// of all at once.
		Setpgid: true,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	r := &processRun{cmd: cmd, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		logFile.Close()
		close(r.done)
	}()
	p.run = r
	return nil
}

func (p *process) running() bool {
	if p.run == nil {
		return false
	}
	select {
	case <-p.run.done:
		return false
	default:
		return true
	}
}

// exited returns a channel closed when the current run ends (nil when it was
// never started, which blocks forever in a select, as wanted).
func (p *process) exited() <-chan struct{} {
	if p.run == nil {
		return nil
	}
	return p.run.done
}

func (p *process) pid() int {
	if p.run == nil {
		return 0
	}
	return p.run.cmd.Process.Pid
}

// stop sends SIGTERM, waits up to grace, then SIGKILL. grace 0 kills at once.
// It returns after the process was reaped, so its PID is gone.
func (p *process) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	r := p.run
	if grace > 0 {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
			return
		case <-time.After(grace):
		}
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// exitError describes how the current run ended, for startup errors.
func (p *process) exitError() error {
	if p.run == nil || p.running() {
		return nil
	}
	if p.run.err == nil {
		return fmt.Errorf("%s exited", p.name)
	}
	return fmt.Errorf("%s exited: %w", p.name, p.run.err)
}

// tail returns the last n lines of the process log, for error messages.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *process) logContains(s string) bool {
	b, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(b, []byte(s))
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// kernel hands out ephemeral ports round-robin, so reuse by another process
// before the caller binds is unlikely; Start retries when it happens.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts holds every listener open until all are picked, so the ports
// are distinct.
// FreePorts returns n distinct free loopback ports, holding them all open
// while choosing so none is handed out twice.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ownerFile records which process owns a server folder, so a later Start can
// remove folders whose owner died without cleaning up (a test binary killed
// by its timeout, say). Pdeathsig already killed their servers.
const (
	ownerFile = "owner.pid"
	dirPrefix = "hivekeeper-apiserver-"
)

func removeStaleDirs(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // being created right now, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// SyncBuffer collects a child process's output: safe for its two output
// pipes and the test goroutine reading it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Len returns how many bytes were written so far.
func (b *SyncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}
