package testenv

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/manager"
)

// Suite is an operator's controllers running against envtest, shared by the
// integration tests of one package.
type Suite struct {
	// CRDs are the files of crds/ the suite installs.
	CRDs []string
	// AddToScheme registers the operator's API types.
	AddToScheme []func(*runtime.Scheme) error
	// Setup registers the controllers under test with the manager.
	Setup func(ctrl.Manager) error
	// Cache returns what the operator's cache narrows
	// (manager.Operator.Cache), so that the tests run with the cache the
	// operator runs with; optional.
	Cache func() map[client.Object]cache.ByObject
	// RBAC is the operator's config/rbac, from the repository root: when
	// every test of the package ran and passed, Main compares the rights of
	// the requests the operator's manager sent with what its Roles grant,
	// and fails on a right missing, unused or given by a wildcard.
	RBAC string
	// MetadataOnly are resources ("secrets") the operator may list and
	// watch for their metadata only (builder.OnlyMetadata), reading an
	// object from the API server when it needs its content: its cache then
	// holds no Secret's data. When the package's tests pass, Main fails if
	// the manager listed or watched one of them whole.
	MetadataOnly []string

	// Client talks to the suite's API server directly (no cache), once
	// Main has started it; it can watch, to see every write to an object.
	Client client.WithWatch

	cfg         *rest.Config
	scheme      *runtime.Scheme
	stopManager func() error
	code        int
	requests    recorder
}

// Main runs the tests of a package with the suite started, from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }
//
// With -short it runs the unit tests alone and starts nothing; the
// integration tests then skip through Namespace.
func (s *Suite) Main(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	if err := s.start(m); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return s.code
}

func (s *Suite) start(m *testing.M) error {
	env, err := Environment(s.CRDs...)
	if err != nil {
		return err
	}
	if s.cfg, err = env.Start(); err != nil {
		return fmt.Errorf("starting envtest: %w", err)
	}
	defer func() { _ = env.Stop() }()

	s.scheme = runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, s.AddToScheme...) {
		if err := add(s.scheme); err != nil {
			return err
		}
	}
	if err := s.startManager(); err != nil {
		return err
	}
	defer func() {
		if err := s.stopManager(); err != nil {
			fmt.Fprintln(os.Stderr, "the manager stopped with:", err)
		}
	}()
	if s.Client, err = client.NewWithWatch(s.cfg, client.Options{Scheme: s.scheme}); err != nil {
		return err
	}
	s.code = m.Run()
	if whole := s.requests.readWhole(s.MetadataOnly); s.code == 0 && len(whole) > 0 {
		s.code = 1
		return fmt.Errorf("the manager listed or watched %s whole: watch them with builder.OnlyMetadata and read one through the API reader", strings.Join(whole, ", "))
	}
	if s.code == 0 && s.RBAC != "" {
		if err := s.checkRights(); err != nil {
			s.code = 1
			return fmt.Errorf("%s: %w", s.RBAC, err)
		}
	}
	return nil
}

// checkRights compares the rights the manager's requests used with those
// the operator's RBAC grants, after a run of every test of the package: a
// run of some (-run, -skip) uses fewer.
func (s *Suite) checkRights() error {
	for _, f := range []string{"test.run", "test.skip"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" {
			fmt.Fprintf(os.Stderr, "testenv: the rights of %s are compared after a run of every test (-%s selected some)\n", s.RBAC, f)
			return nil
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	grants, err := granted(filepath.Join(root, s.RBAC))
	if err != nil {
		return err
	}
	return compareRights(s.requests.rights(), grants)
}

// startManager runs the controllers in a new manager, with nothing but what
// the API server holds: what an operator has after a start.
func (s *Suite) startManager() error {
	var byObject map[client.Object]cache.ByObject
	if s.Cache != nil {
		byObject = s.Cache()
	}
	cfg := rest.CopyConfig(s.cfg)
	cfg.Wrap(s.requests.wrap)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s.scheme,
		// Leader election as the operators run it (manager.New), in the
		// namespace every cluster has.
		LeaderElection:                true,
		LeaderElectionID:              "suite.operator-workshops.io",
		LeaderElectionNamespace:       metav1.NamespaceDefault,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         manager.CacheOptions(byObject, nil),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		// As many workers as the operators run with. Restart registers the
		// same controllers again in this process.
		Controller: config.Controller{MaxConcurrentReconciles: manager.DefaultWorkers, SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	if err := apply.FollowCache(context.Background(), mgr.GetCache(), slices.Collect(maps.Keys(byObject))...); err != nil {
		return err
	}
	if err := s.Setup(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	s.stopManager = func() error {
		cancel()
		return <-done
	}
	return nil
}

// Restart stops the controllers and starts them again in a new manager, as
// when an operator's process is killed and started again: the new one keeps
// nothing in memory and lists its caches afresh.
func (s *Suite) Restart(t testing.TB) {
	t.Helper()
	s.Down(t, func() {})
}

// Down stops the controllers, runs f, and starts them again in a new
// manager, as when an operator is down while the cluster changes: what f
// does is seen all at once, by a process that keeps nothing in memory.
func (s *Suite) Down(t testing.TB, f func()) {
	t.Helper()
	if err := s.stopManager(); err != nil {
		t.Fatalf("stopping the manager: %v", err)
	}
	apply.Reset()
	defer func() {
		if err := s.startManager(); err != nil {
			t.Fatalf("starting a new manager: %v", err)
		}
	}()
	f()
}

// Namespace creates a namespace for one integration test, with labels, and
// skips the test under -short.
func (s *Suite) Namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the envtest control plane (run without -short)")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-", Labels: labels}}
	if err := s.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
