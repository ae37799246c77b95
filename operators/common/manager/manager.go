// Package manager starts an operator the same way for every operator of the
// project: the same flags, logging, health probes, namespace scoping, leader
// election and graceful shutdown. An operator's cmd/main.go only names itself,
// its API types and its controllers.
package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/metricsauth"
)

// MaxVerbosity is the highest -v an operator takes: from 8 on, client-go
// logs the bodies of requests and responses, and Secrets carry passwords.
const MaxVerbosity = 7

// WatchNamespaceEnv is read when --namespace is not given. OLM sets it from
// an OperatorGroup's target namespaces.
const WatchNamespaceEnv = "WATCH_NAMESPACE"

// Operator describes one operator binary.
type Operator struct {
	// Name is the operator's short name ("database"). It names the leader
	// election lease, the flag set and the operator in the logs (each
	// operator names its field owner and event source itself:
	// controller.FieldOwner).
	Name string
	// AddToScheme registers the operator's API types.
	AddToScheme []func(*runtime.Scheme) error
	// Flags binds operator-specific flags; optional.
	Flags func(*flag.FlagSet)
	// Configure adjusts the shared options once the flags are parsed,
	// before the manager is built (for example to narrow the namespaces an
	// operator watches); optional.
	Configure func(*Options) error
	// Setup registers the controllers with the manager.
	Setup func(ctrl.Manager, Options) error
	// Cache narrows what the informers hold of some kinds, usually to the
	// operator's own children (Children); other kinds are cached whole.
	// Reads of what is left out go to the API server (apply.Get).
	Cache map[client.Object]cache.ByObject
	// DefaultProbeAddr lets operators that run side by side on one machine
	// (make run) listen on different ports by default.
	DefaultProbeAddr string
}

// Options are the flags every operator shares.
type Options struct {
	MetricsAddr   string
	MetricsSecure bool
	ProbeAddr     string
	PprofAddr     string
	LeaderElect   bool
	LeaderElectNS string
	Namespaces    []string
	ShutdownGrace time.Duration
	Verbosity     int
	QPS           float64
	Burst         int
	Workers       int
	Zap           zap.Options
}

// BindFlags registers the shared flags on fs.
func (o *Options) BindFlags(fs *flag.FlagSet, op Operator) {
	probe := op.DefaultProbeAddr
	if probe == "" {
		probe = ":8081"
	}
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "0",
		"Address of the Prometheus metrics endpoint, e.g. :8080; 0 disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false,
		"Serve the metrics over HTTPS (a self-signed certificate), only to a client whose bearer token the API server "+
			"authenticates and authorizes for GET /metrics; the shipped manifests set it. Off, they are plain HTTP, for a local go run.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", probe,
		"Address of the /healthz and /readyz endpoints; 0 disables them.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0",
		"Address of Go's profiles (/debug/pprof/), e.g. 127.0.0.1:8082, for make bench's heap profile; 0 disables them.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false,
		"Elect a leader so that only one replica of the operator acts at a time.")
	fs.StringVar(&o.LeaderElectNS, "leader-election-namespace", "",
		"Namespace of the leader election lease; default: the operator pod's own namespace.")
	fs.Func("namespace", "Namespace to watch; repeat or separate with commas for several. "+
		"Default: $"+WatchNamespaceEnv+", or every namespace when that is empty.", func(s string) error {
		o.Namespaces = append(o.Namespaces, splitList(s)...)
		return nil
	})
	fs.DurationVar(&o.ShutdownGrace, "graceful-shutdown-timeout", 30*time.Second,
		"How long running reconciles may take to finish after SIGTERM.")
	fs.Float64Var(&o.QPS, "kube-api-qps", 20, "Requests per second the operator may send to the API server.")
	fs.IntVar(&o.Burst, "kube-api-burst", 30, "Requests the operator may send at once above --kube-api-qps.")
	fs.IntVar(&o.Workers, "workers", DefaultWorkers,
		"How many custom resources are reconciled at once. Each kind of request has its own --kube-api-qps: "+
			"one worker waits on each in turn, several keep them all busy.")
	fs.IntVar(&o.Verbosity, "v", 0,
		fmt.Sprintf("Log verbosity, as Kubernetes components count it: 6 logs every API request with its status and latency; "+
			"at most %d, since from 8 on client-go logs request and response bodies, Secrets' passwords included; overrides --zap-log-level.", MaxVerbosity))
	o.Zap.Development = true
	o.Zap.BindFlags(fs)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Main runs op until SIGINT or SIGTERM and exits the process.
func Main(op Operator) {
	if err := Run(op, os.Args[1:]); err != nil {
		ctrl.Log.WithName("setup").Error(err, "operator stopped", "operator", op.Name)
		os.Exit(1)
	}
}

// Run parses args, builds the manager and runs it until a signal arrives.
func Run(op Operator, args []string) error {
	var o Options
	fs := flag.NewFlagSet(op.Name+"-operator", flag.ContinueOnError)
	o.BindFlags(fs, op)
	// --kubeconfig is controller-runtime's own flag, registered on the
	// default flag set; carry it over so ctrl.GetConfig sees it.
	fs.Var(flag.CommandLine.Lookup("kubeconfig").Value, "kubeconfig",
		"Path to a kubeconfig; default: $KUBECONFIG, then in a pod its ServiceAccount's token, then ~/.kube/config.")
	if op.Flags != nil {
		op.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if o.Verbosity > MaxVerbosity {
		return fmt.Errorf("-v=%d would log the bodies of API requests and responses, Secrets' passwords included: use -v=%d at most "+
			"(-v=6 logs every request with its status and latency)", o.Verbosity, MaxVerbosity)
	}
	if len(o.Namespaces) == 0 {
		o.Namespaces = splitList(os.Getenv(WatchNamespaceEnv))
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	if op.Configure != nil {
		if err := op.Configure(&o); err != nil {
			return err
		}
	}

	zapOpts := []zap.Opts{zap.UseFlagOptions(&o.Zap)}
	if o.Verbosity > 0 {
		// client-go logs each request at level 6, through the logger of the
		// request's context: the operator's own. Open it to that level.
		zapOpts = append(zapOpts, zap.Level(zapcore.Level(-o.Verbosity)))
	}
	logger := zap.New(zapOpts...)
	ctrl.SetLogger(logger)
	// What client-go logs outside a request context goes through klog.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if err := klogFlags.Set("v", strconv.Itoa(o.Verbosity)); err != nil {
		return err
	}
	klog.SetLogger(logger.WithName("client-go"))

	mgr, err := New(op, o)
	if err != nil {
		return err
	}
	if err := op.Setup(mgr, o); err != nil {
		return fmt.Errorf("setting up the %s controllers: %w", op.Name, err)
	}
	scope := "all namespaces"
	if len(o.Namespaces) > 0 {
		scope = "namespaces " + strings.Join(o.Namespaces, ",")
	}
	ctx := ctrl.SetupSignalHandler()
	logLogin(ctx, mgr)
	ctrl.Log.WithName("setup").Info("starting operator", "operator", op.Name, "watching", scope)
	return mgr.Start(ctx)
}

// metricsOptions serves the metrics as o says: with --metrics-secure over
// HTTPS, each request's token checked by the API server (a TokenReview,
// then a SubjectAccessReview for GET on the path /metrics), as kubebuilder's
// projects ship them.
func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = metricsauth.Provider
	}
	return m
}

// GCPercent is the operators' garbage collection target unless $GOGC says
// otherwise: the heap may grow to 1.5 times what is live, not Go's default
// 2. The operators wait on the API server, not on the CPU: make bench's runs
// took as long with it, and peaked lower (bench/README.md).
const GCPercent = 50

// DefaultWorkers is --workers unless given: how many custom resources
// each controller reconciles at once.
const DefaultWorkers = 4

// New builds a manager for op with options o, using the kubeconfig
// controller-runtime finds (flag, $KUBECONFIG, in-cluster, ~/.kube/config).
func New(op Operator, o Options) (ctrl.Manager, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes cluster to talk to (give --kubeconfig or run `make cluster-up`): %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, op.AddToScheme...) {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	grace := o.ShutdownGrace
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   CacheOptions(op.Cache, o.Namespaces),
		Metrics:                 metricsOptions(o),
		Controller:              config.Controller{MaxConcurrentReconciles: max(o.Workers, 1)},
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        op.Name + ".operator-workshops.io",
		LeaderElectionNamespace: o.LeaderElectNS,
		// Run returns, and the process ends, once the manager has stopped:
		// releasing the lease then lets a new replica lead at once instead
		// of after the lease's 15 s (a killed one's lease still runs out).
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &grace,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s manager: %w", op.Name, err)
	}
	if err := apply.FollowCache(context.Background(), mgr.GetCache(), slices.Collect(maps.Keys(op.Cache))...); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready once the caches are synced: a client that waits for readiness
	// (a Deployment's rollout, the benchmark) then sees every object it
	// creates reconciled as an event, not queued behind the initial list.
	if err := mgr.AddReadyzCheck("readyz", cachesSynced(mgr.GetCache())); err != nil {
		return nil, err
	}
	return mgr, nil
}

// cachesSynced is a readiness check that passes once every informer of c
// has synced.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the caches have not synced yet")
		}
		return nil
	}
}

// CacheOptions are the cache settings of every operator: the namespaces it
// watches (all when none), byObject's narrower selection of some kinds, and
// each object lean (no managedFields, its metadata's strings shared).
func CacheOptions(byObject map[client.Object]cache.ByObject, namespaces []string) cache.Options {
	o := cache.Options{ByObject: byObject, DefaultTransform: lean}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// Children selects, for the cache, the objects of each of kinds that carry
// the app.kubernetes.io/managed-by label managedBy (labels.Standard puts it
// on every child): an operator that creates Pods caches its own, not every
// Pod of the cluster.
func Children(managedBy string, kinds ...client.Object) map[client.Object]cache.ByObject {
	sel := k8slabels.SelectorFromSet(k8slabels.Set{labels.ManagedBy: managedBy})
	m := make(map[client.Object]cache.ByObject, len(kinds))
	for _, k := range kinds {
		m[k] = cache.ByObject{Label: sel}
	}
	return m
}

// Trim narrows what byObject's cache keeps of the objects of type T, one of
// its kinds, to what trim leaves of each, lean besides (as every kind). It
// is for children an operator reads but never applies nor updates whole
// (pods its Deployment or Job runs, a ReplicaSet, a Job it creates once):
// their specs are most of their size, and a cache of 1000
// custom resources holds thousands of them. trim must leave every field the
// operator reads of them; it runs on each object before the cache stores
// it, and again on an object it trimmed. Trim panics when T is not one of
// byObject's kinds, a mistake of the operator's Cache function.
func Trim[T client.Object](byObject map[client.Object]cache.ByObject, trim func(T)) {
	for kind, o := range byObject {
		if _, ok := kind.(T); !ok {
			continue
		}
		o.Transform = func(in any) (any, error) {
			out, err := lean(in)
			if obj, ok := out.(T); ok && err == nil {
				trim(obj)
			}
			return out, err
		}
		byObject[kind] = o
		return
	}
	var kind T
	panic(fmt.Sprintf("manager.Trim: %T is not one of the cache's kinds", kind))
}
