package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// component is a process of a local cluster's control plane, as kwokctl
// started it: what it takes to start it again.
type component struct {
	name, pidFile, dir, log string
	pid                     int
	args, env               []string
}

// controlPlane reads the components of the local cluster from kwokctl's pid
// files and their processes.
func (s *Suite) controlPlane() ([]*component, error) {
	dir := filepath.Join(kwokWorkdir(), "clusters", s.name)
	files, err := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no pid files of cluster %s in %s", s.name, dir)
	}
	var out []*component
	for _, f := range files {
		c := &component{name: strings.TrimSuffix(filepath.Base(f), ".pid"), pidFile: f, dir: dir}
		c.log = filepath.Join(dir, "logs", c.name+".log")
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if c.pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		proc := fmt.Sprintf("/proc/%d/", c.pid)
		cmdline, err := os.ReadFile(proc + "cmdline")
		if err != nil {
			return nil, fmt.Errorf("%s (pid %d) of %s: %w", c.name, c.pid, s.name, err)
		}
		environ, err := os.ReadFile(proc + "environ")
		if err != nil {
			return nil, err
		}
		c.args = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		c.env = strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
		out = append(out, c)
	}
	return out, nil
}

// kwokWorkdir is where kwokctl keeps its clusters.
func kwokWorkdir() string {
	if workdir := os.Getenv("KWOK_WORKDIR"); workdir != "" {
		return workdir
	}
	return filepath.Join(os.Getenv("HOME"), ".kwok")
}

// holdCreation takes the lock under which scripts/cluster.sh creates a
// cluster, waiting for at most five minutes, and returns its release.
// kwokctl picks a new cluster's ports by trying them: one created while a
// component is stopped may take its port, and the component could not
// start again (kube-apiserver: "bind: address already in use").
func holdCreation() (func(), error) {
	return lockFile(filepath.Join(kwokWorkdir(), "cluster-create.lock"), 5*time.Minute, func() {})
}

// alive reports whether the component's process runs. Its parent is init
// (kwokctl started it in a session of its own) or this process (an earlier
// start), which reaps it: it is gone when /proc no longer has it.
func (c *component) alive() bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", c.pid))
	return err == nil
}

// stop sends sig, and SIGKILL after 30 seconds, as the kubelet does to a
// static pod's container, and waits until the process is gone.
func (c *component) stop(sig syscall.Signal) error {
	if err := syscall.Kill(c.pid, sig); err != nil {
		return fmt.Errorf("kill -%d %d (%s): %w", sig, c.pid, c.name, err)
	}
	for end := time.Now().Add(30 * time.Second); c.alive(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			_ = syscall.Kill(c.pid, syscall.SIGKILL)
		}
	}
	return nil
}

// start runs the component again with the same command line, environment,
// directory and log, and writes its pid where kwokctl reads it to stop the
// cluster.
func (c *component) start() error {
	log, err := os.OpenFile(c.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s again: %w", c.name, err)
	}
	go func() { _ = cmd.Wait() }() // reaped when it ends
	c.pid = cmd.Process.Pid
	return os.WriteFile(c.pidFile, []byte(strconv.Itoa(c.pid)), 0o644)
}

// plane is a local cluster's control plane under a supervisor that does
// what a control plane's kubelet does for its static pods: it starts again
// any component that exits, whenever it exits. kwokctl starts them as bare
// processes, which nothing restarts; after an API server restart the
// scheduler can exit minutes later (a soak's kube-scheduler exited on
// "Scheduler cache is corrupted" two seconds after RestartAPIServer's
// watch ended, and every pod made after it stayed Pending).
type plane struct {
	mu         sync.Mutex // held while a component is stopped on purpose
	components []*component
	done       chan struct{}
}

// planes guards Suite.plane: a suite's tests restart its API server side
// by side.
var planes sync.Mutex

// supervised returns the cluster's control plane, read from kwokctl's pid
// files the first time, with its supervisor running until Finish.
func (s *Suite) supervised() (*plane, error) {
	planes.Lock()
	defer planes.Unlock()
	if s.plane != nil {
		return s.plane, nil
	}
	components, err := s.controlPlane()
	if err != nil {
		return nil, err
	}
	p := &plane{components: components, done: make(chan struct{})}
	go p.supervise(time.Second)
	s.plane = p
	return p, nil
}

// supervise starts again, every interval, the components that have exited.
func (p *plane) supervise(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		p.mu.Lock()
		started, err := p.startExited(nil)
		p.mu.Unlock()
		if len(started) > 0 {
			fmt.Fprintf(os.Stderr, "cluster: %s exited; started again, as a kubelet restarts a static pod\n", strings.Join(started, ", "))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		}
	}
}

// startExited starts again every component but except that has exited, and
// returns the names of those it started; p.mu is held.
func (p *plane) startExited(except *component) (started []string, err error) {
	var errs []error
	for _, c := range p.components {
		if c == except || c.alive() {
			continue
		}
		if err := c.start(); err != nil {
			errs = append(errs, err)
			continue
		}
		started = append(started, c.name)
	}
	return started, errors.Join(errs...)
}

// release stops the supervisor, before the cluster is deleted; nil does
// nothing.
func (p *plane) release() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
	default:
		close(p.done)
	}
}

// RestartAPIServer stops the kube-apiserver of a local cluster with sig
// (SIGTERM: a rolling update's graceful stop, SIGKILL after 30 seconds;
// SIGKILL: a crash) and starts it again with the command line, environment
// and log kwokctl gave it. Every watch and request in flight ends. Then,
// as a control plane's kubelet restarts its static pods, it starts again
// any other component that exits within 15 seconds (the scheduler and the
// controller manager exit when they cannot renew their leader lease), and
// the supervisor any that exits later. It returns what it restarted, once
// the API server answers /readyz and the other components have stayed up.
// No cluster is created meanwhile (holdCreation), so that none takes the
// stopped components' ports. Local clusters only.
func (s *Suite) RestartAPIServer(ctx context.Context, sig syscall.Signal) (restarted []string, err error) {
	if s.Provider != Local {
		return nil, errors.New("RestartAPIServer restarts a local cluster's own processes")
	}
	p, err := s.supervised()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var api *component
	for _, c := range p.components {
		if c.name == "kube-apiserver" {
			api = c
		}
	}
	if api == nil {
		return nil, fmt.Errorf("cluster %s has no kube-apiserver pid file", s.name)
	}
	release, err := holdCreation()
	if err != nil {
		return nil, err
	}
	defer release()
	if err := api.stop(sig); err != nil {
		return nil, err
	}
	if err := api.start(); err != nil {
		return nil, err
	}
	restarted = append(restarted, api.name)
	for {
		out, err := s.Command(ctx, "kubectl", "get", "--raw", "/readyz", "--request-timeout=5s").CombinedOutput()
		if err == nil && bytes.Equal(bytes.TrimSpace(out), []byte("ok")) {
			break
		}
		select {
		case <-ctx.Done():
			return restarted, fmt.Errorf("kube-apiserver restarted, not ready: %w (%s)", ctx.Err(), out)
		case <-time.After(500 * time.Millisecond):
		}
	}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		started, err := p.startExited(api)
		restarted = append(restarted, started...)
		if err != nil {
			return restarted, err
		}
	}
	return restarted, nil
}
