package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// namespace is where every measured CR lives (the seed's Python operator
// knows only "default").
const namespace = "bench"

// A cluster is one fresh local cluster (scripts/cluster.sh) with fake nodes
// only, reached through a kubeconfig of its own.
type cluster struct {
	root, name string
}

func (c *cluster) kubeconfig() string {
	return filepath.Join(c.root, "bin", "kubeconfig-bench-"+c.name)
}

// command runs from the repository root with bin/ first on PATH and the
// cluster's kubeconfig. The real node stays out: its pods would really run
// and its taint keeps other pods off it, so it would measure the machine.
func (c *cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(c.root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+c.kubeconfig(),
		"KUBECACHEDIR="+filepath.Join(c.root, "bin", "kubectl-cache-bench-"+c.name),
		"CLUSTER_REAL_NODE=off")
	return cmd
}

func (c *cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := c.command(ctx, name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", cmd, err, out)
	}
	return nil
}

// fresh deletes the cluster if it exists and creates it again with nodes
// fake nodes, the CRDs of crds/ (and extra files) and the bench namespace.
func (c *cluster) fresh(ctx context.Context, nodes int, crds ...string) error {
	if err := c.down(ctx); err != nil {
		return err
	}
	up := c.command(ctx, "scripts/cluster.sh", "up", c.name)
	up.Env = append(up.Env, "CLUSTER_NODES="+strconv.Itoa(nodes))
	if out, err := up.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/cluster.sh up %s: %w\n%s", c.name, err, out)
	}
	for _, f := range append([]string{"crds/"}, crds...) {
		if err := c.run(ctx, "kubectl", "apply", "--server-side", "-f", f); err != nil {
			return err
		}
		if err := c.run(ctx, "kubectl", "wait", "--for=condition=Established", "--timeout=60s", "-f", f); err != nil {
			return err
		}
	}
	return c.run(ctx, "kubectl", "create", "namespace", namespace)
}

func (c *cluster) down(ctx context.Context) error {
	return c.run(ctx, "scripts/cluster.sh", "down", c.name)
}

// config is a client configuration for the cluster: limited to qps and
// burst as an operator's is, or unlimited when qps is 0 (the harness's own
// client, which must not be what limits the measure).
func (c *cluster) config(qps float64, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		return nil, err
	}
	// client-go keeps one TLS transport per certificate file name; the next
	// fresh cluster has new certificates under the same names. Their
	// contents make the key instead.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, err
	}
	if qps == 0 {
		cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	} else {
		cfg.QPS, cfg.Burst = float32(qps), burst
	}
	return cfg, nil
}

func (c *cluster) dynamic() (*dynamic.DynamicClient, error) {
	cfg, err := c.config(0, 0)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// A process is an operator (or the seed's Python operator) under measure.
type process struct {
	cmd     *exec.Cmd
	metrics string // the metrics endpoint's URL; empty for the seed
	pprof   string // the profiles' base URL; empty for the seed
	exited  chan struct{}
}

// start runs cmd in a process group of its own with its output in log.
func start(cmd *exec.Cmd, log string) (*process, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.exited) }()
	return p, nil
}

// alive fails when the process has exited: a measure of a dead operator is
// no measure.
func (p *process) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v", p.cmd.Path, p.cmd.ProcessState)
	default:
		return nil
	}
}

// stop interrupts the process as Ctrl-C would, and kills it after 15 s.
func (p *process) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// startOperator runs the binary of operator op, built by buildOperators,
// on the cluster's bench namespace with the client limits and workers of s.
func startOperator(ctx context.Context, c *cluster, op string, s settings) (*process, error) {
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	probePort, err := freePort()
	if err != nil {
		return nil, err
	}
	pprofPort, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + c.kubeconfig(),
		"--namespace=" + namespace,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
		"--pprof-bind-address=127.0.0.1:" + strconv.Itoa(pprofPort),
		"--kube-api-qps=" + strconv.FormatFloat(s.qps, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(s.burst),
	}
	if s.workers > 0 {
		args = append(args, "--workers="+strconv.Itoa(s.workers))
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.root, "bin", "bench", op+"-operator"), args...)
	p, err := start(cmd, logFile(c.root, op))
	if err != nil {
		return nil, err
	}
	p.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	p.pprof = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort)
	if err := p.waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)); err != nil {
		p.stop()
		return nil, fmt.Errorf("the %s operator: %w (its log: %s)", op, err, logFile(c.root, op))
	}
	return p, nil
}

func logFile(root, name string) string {
	return filepath.Join(root, "bin", "logs", "bench-"+name+".log")
}

// waitReady waits for the operator's readiness endpoint.
func (p *process) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if err := p.alive(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("not ready after a minute")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// buildOperators builds each operator's binary once, into bin/bench: the
// measure runs the binary itself, so its memory is the operator's and not
// go run's.
func buildOperators(ctx context.Context, root string, ops []string) error {
	for _, op := range ops {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join("bin", "bench", op+"-operator"), "./operators/"+op+"/cmd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building the %s operator: %w\n%s", op, err, out)
		}
	}
	return os.MkdirAll(filepath.Join(root, "bin", "logs"), 0o755)
}
