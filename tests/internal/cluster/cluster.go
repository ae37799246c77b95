// Package cluster gives the e2e suites a cluster and the operators under
// test, whatever the provider:
//
//   - E2E_PROVIDER=local (the default): the project's kwok cluster
//     (scripts/cluster.sh), named by E2E_CLUSTER (default "e2e"), with its
//     own kubeconfig file so the user's kubeconfig is left alone. Each
//     operator runs as a local process, started exactly as the README says:
//     `go run ./operators/<name>/cmd`.
//   - E2E_PROVIDER=kind: a kind cluster (scripts/kind.sh), operators deployed
//     in the cluster from their config/ manifests (scripts/deploy.sh).
//   - E2E_PROVIDER=kubeconfig: the cluster $KUBECONFIG names, operators run
//     as local processes.
//
// E2E_KEEP_CLUSTER=1 leaves a local or kind cluster running after the tests.
//
// NewRealNode is the suite of the steps that need real containers: its local
// cluster ("realnode") gets the machine's real node, as $E2E_REAL_NODE says
// (auto by default: the steps skip, saying why, on a machine that cannot run
// containers; required makes that a failure, as CI wants).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-workshops/workshop/operators/common/testenv"
)

// Provider is where the tests run.
type Provider string

// The providers E2E_PROVIDER selects.
const (
	Local      Provider = "local"
	Kind       Provider = "kind"
	Kubeconfig Provider = "kubeconfig"
)

// FromEnv returns the provider E2E_PROVIDER names.
func FromEnv() (Provider, error) {
	switch p := Provider(os.Getenv("E2E_PROVIDER")); p {
	case "":
		return Local, nil
	case Local, Kind, Kubeconfig:
		return p, nil
	default:
		return "", fmt.Errorf("E2E_PROVIDER=%s: want local, kind or kubeconfig", p)
	}
}

// Suite is the state of one test binary's cluster and operators.
type Suite struct {
	Provider Provider
	Root     string
	name     string
	realNode string // CLUSTER_REAL_NODE for scripts/cluster.sh; off when empty
	procs    map[string]*exec.Cmd
	// operatorKubeconfig, when set, is the kubeconfig the operators started
	// as local processes reach the API server with (OperatorsReach).
	operatorKubeconfig string
	// plane is the local cluster's control plane once RestartAPIServer
	// first read it; its kubelet is the supervisor (apiserver.go).
	plane *plane
}

// New returns the suite for the provider E2E_PROVIDER names.
func New() (*Suite, error) {
	p, err := FromEnv()
	if err != nil {
		return nil, err
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	name := os.Getenv("E2E_CLUSTER")
	if name == "" {
		name = "e2e"
	}
	return &Suite{Provider: p, Root: root, name: name, procs: map[string]*exec.Cmd{}}, nil
}

// NewRealNode returns the suite of the real-container steps; see the package
// documentation.
func NewRealNode() (*Suite, error) { return newWithRealNode("realnode") }

// NewOLM returns the suite that installs the operators through OLM: its local
// cluster ("olm") gets the real node as NewRealNode's does, and no CRDs or
// operators of its own (Up, not Setup): OLM installs them.
func NewOLM() (*Suite, error) { return newWithRealNode("olm") }

// NewDeploy returns the suite that deploys the operators from their shipped
// manifests (scripts/deploy.sh): its local cluster ("deploy") gets the real
// node, where the operators' pods run, and the CRDs (Setup with no
// operator: none runs as a process).
func NewDeploy() (*Suite, error) { return newWithRealNode("deploy") }

// NewFaults returns the fault-injection suite: its local cluster ("faults")
// gets the real node as NewRealNode's does.
func NewFaults() (*Suite, error) { return newWithRealNode("faults") }

// OperatorsReach makes the operators started as local processes from now on
// reach the API server with kubeconfig instead of the suite's own (a proxy's
// address, for the faults suite to cut their connections).
func (s *Suite) OperatorsReach(kubeconfig string) { s.operatorKubeconfig = kubeconfig }

func newWithRealNode(cluster string) (*Suite, error) {
	s, err := New()
	if err != nil {
		return nil, err
	}
	if os.Getenv("E2E_CLUSTER") == "" {
		s.name = cluster
	}
	if s.realNode = os.Getenv("E2E_REAL_NODE"); s.realNode == "" {
		s.realNode = "auto"
	}
	return s, nil
}

// RealContainers reports whether pods of the workshop's images really run:
// on kind, or on a local cluster with a real node. It says why not otherwise.
func (s *Suite) RealContainers(ctx context.Context) (bool, string) {
	if s.Provider == Kind {
		return true, ""
	}
	out, err := s.Run(ctx, "kubectl", "get", "nodes", "-o", NodeKinds)
	if err != nil {
		return false, err.Error()
	}
	if HasRealNode(out) {
		return true, ""
	}
	return false, "the cluster has fake nodes only: this machine cannot run containers (scripts/cluster.sh up says why; .ci/run installs what it needs)"
}

// ContainerNode is the name of the node where the suite's pods really run:
// the local cluster's real node, or kind's one node.
func (s *Suite) ContainerNode() string {
	if s.Provider == Kind {
		return s.name + "-control-plane"
	}
	return "real-node"
}

// NodeKinds is the output format for `kubectl get nodes -o` that HasRealNode
// reads: a line per node, its name, "=", and "fake" for kwok's fake nodes.
const NodeKinds = `jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.kwok\.x-k8s\.io/node}{"\n"}{end}`

// HasRealNode reports whether `kubectl get nodes -o NodeKinds` printed a node
// that is not one of kwok's fake ones.
func HasRealNode(nodeKinds string) bool {
	for _, line := range strings.Split(strings.TrimSpace(nodeKinds), "\n") {
		if name, kind, _ := strings.Cut(line, "="); name != "" && kind != "fake" {
			return true
		}
	}
	return false
}

// Kubeconfig returns the kubeconfig file the suite's cluster is reached with.
func (s *Suite) Kubeconfig() string {
	if s.Provider == Kubeconfig {
		return os.Getenv("KUBECONFIG")
	}
	return filepath.Join(s.Root, "bin", "kubeconfig-"+string(s.Provider)+"-"+s.name)
}

// Command returns a command run from the repository root with the project's
// bin/ first on PATH and KUBECONFIG pointing at the suite's cluster.
func (s *Suite) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.Root
	cmd.Env = Env(s.Root, s.Kubeconfig(), filepath.Join(s.Root, "bin", "kubectl-cache-"+string(s.Provider)+"-"+s.name))
	if s.realNode != "" {
		cmd.Env = append(cmd.Env, "CLUSTER_REAL_NODE="+s.realNode) // the last one counts
	}
	return cmd
}

// Kubectl runs kubectl against the suite's cluster and returns its output;
// it fails t when kubectl fails.
func (s *Suite) Kubectl(ctx context.Context, t testing.TB, args ...string) string {
	t.Helper()
	out, err := s.Run(ctx, "kubectl", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Run runs a command like Command and returns its combined output, with the
// output in the error when it fails.
func (s *Suite) Run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := s.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Name is the suite's cluster name, as scripts/cluster.sh and kind.sh know it.
func (s *Suite) Name() string { return s.name }

// Setup brings the cluster up, installs the CRDs and starts the operators.
func (s *Suite) Setup(operators ...string) env.Func {
	up := s.Up()
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		ctx, err := up(ctx, cfg)
		if err != nil {
			return ctx, err
		}
		if _, err := s.Run(ctx, "kubectl", "apply", "--server-side", "-f", "crds/"); err != nil {
			return ctx, err
		}
		if _, err := s.Run(ctx, "kubectl", "wait", "--for=condition=Established", "--timeout=60s", "-f", "crds/"); err != nil {
			return ctx, err
		}
		for _, op := range operators {
			if err := s.startOperator(ctx, op); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	}
}

// Up brings the cluster up and points cfg at it, with nothing installed.
func (s *Suite) Up() env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		var err error
		switch s.Provider {
		case Local:
			// A fake node takes 110 pods; the scale tests run 300.
			cmd := s.Command(ctx, "scripts/cluster.sh", "up", s.name)
			cmd.Env = append(cmd.Env, "CLUSTER_NODES=4")
			if out, cerr := cmd.CombinedOutput(); cerr != nil {
				err = fmt.Errorf("scripts/cluster.sh up %s: %w\n%s", s.name, cerr, out)
			}
		case Kind:
			_, err = s.Run(ctx, "scripts/kind.sh", "up", s.name)
		case Kubeconfig:
			if s.Kubeconfig() == "" {
				err = errors.New("E2E_PROVIDER=kubeconfig needs KUBECONFIG")
			}
		}
		if err != nil {
			return ctx, err
		}
		cfg.WithKubeconfigFile(s.Kubeconfig())
		return ctx, nil
	}
}

// startOperator runs one operator: in the cluster on kind, else as a local
// process started with the README's `go run` command, in a process group of
// its own so that stopping it stops the compiled child too.
func (s *Suite) startOperator(ctx context.Context, op string, args ...string) error {
	return s.startInstance(ctx, op, op, args...)
}

// startInstance runs operator op under name, so that one operator can run
// twice with different flags (the etcd operator namespaced and cluster-wide).
func (s *Suite) startInstance(ctx context.Context, name, op string, args ...string) error {
	if s.Provider == Kind {
		// The tests' CRs are in namespaces of their own: the operators that
		// serve namespace default only in config/default run cluster-wide.
		spec := op
		if op != "etcd-cluster" {
			spec += ":cluster-wide"
		}
		_, err := s.Run(ctx, "scripts/deploy.sh", s.name, spec)
		return err
	}
	logs := filepath.Join(s.Root, "bin", "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	// Appending keeps the log of a run before a restart.
	log, err := os.OpenFile(filepath.Join(logs, "e2e-"+name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	kubeconfig := s.Kubeconfig()
	if s.operatorKubeconfig != "" {
		kubeconfig = s.operatorKubeconfig
	}
	// The tests' context ends with Setup; the operator lives until Finish.
	cmd := s.Command(context.Background(), "go", append([]string{"run", "./operators/" + op + "/cmd",
		"--kubeconfig=" + kubeconfig, "--health-probe-bind-address=0"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := StartGroup(cmd); err != nil {
		return fmt.Errorf("starting the %s operator: %w", op, err)
	}
	s.procs[name] = cmd
	return nil
}

// KillOperator kills an operator at once, wherever it is in its work, as a
// crash or an OOM kill would: SIGKILL to a local process, a forced delete of
// the pod on kind (whose Deployment starts a new one).
func (s *Suite) KillOperator(ctx context.Context, op string) error {
	if s.Provider == Kind {
		// Whatever namespace its manifests put it in (etc for the etcd operator).
		_, err := s.Run(ctx, "kubectl", "delete", "pod", "--all-namespaces",
			"-l", "app.kubernetes.io/name="+op+"-operator", "--grace-period=0", "--force")
		return err
	}
	cmd, ok := s.procs[op]
	if !ok {
		return fmt.Errorf("the %s operator is not running", op)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	delete(s.procs, op)
	return nil
}

// PauseOperator stops a local operator process where it is (SIGSTOP to its
// process group), as a long garbage-collection pause or a starved node
// would, so that a test can act on the cluster at a point of the
// operator's work it chooses; resume lets it go on (SIGCONT). Local
// clusters only.
func (s *Suite) PauseOperator(op string) (resume func(), err error) {
	cmd, ok := s.procs[op]
	if !ok || s.Provider == Kind {
		return nil, fmt.Errorf("the %s operator is not a local process here", op)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pausing the %s operator: %w", op, err)
	}
	return func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT) }, nil
}

// StartOperator starts an operator again after KillOperator, with extra
// flags; on kind its Deployment already did, with the flags of its manifest.
func (s *Suite) StartOperator(ctx context.Context, op string, args ...string) error {
	if s.Provider == Kind {
		return nil
	}
	return s.startOperator(ctx, op, args...)
}

// Deploy runs operator op in the cluster from its config/default manifests,
// as the kind workflow does. Kind only: locally operators run as processes
// (StartInstance).
func (s *Suite) Deploy(ctx context.Context, op string) error {
	if s.Provider != Kind {
		return errors.New("Deploy builds an image and loads it into kind; locally use StartInstance")
	}
	_, err := s.Run(ctx, "scripts/deploy.sh", s.name, op)
	return err
}

// StartInstance runs a second instance of operator op, named name (for
// KillOperator and its log file), with flags args. Local clusters only: on
// kind an operator runs as its manifests say.
func (s *Suite) StartInstance(ctx context.Context, name, op string, args ...string) error {
	if s.Provider == Kind {
		return errors.New("StartInstance runs operators as local processes; on kind deploy a manifest instead")
	}
	return s.startInstance(ctx, name, op, args...)
}

// Finish stops the operators and, unless E2E_KEEP_CLUSTER=1, the cluster.
func (s *Suite) Finish() env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		s.plane.release()
		for _, p := range s.procs {
			StopGroup(p)
		}
		if os.Getenv("E2E_KEEP_CLUSTER") == "1" {
			return ctx, nil
		}
		var err error
		switch s.Provider {
		case Local:
			_, err = s.Run(ctx, "scripts/cluster.sh", "down", s.name)
		case Kind:
			_, err = s.Run(ctx, "scripts/kind.sh", "down", s.name)
		}
		return ctx, err
	}
}
