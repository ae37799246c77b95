package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// leaseDuration and retryPeriod are controller-runtime's defaults, which the
// operators keep: a killed leader's lease runs out leaseDuration after its
// last renewal, and a candidate tries every retryPeriod.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

type replicas struct{}

// Two replicas of an operator with --leader-elect, as a Deployment of two
// would run: one leads and acts, the other waits; killed with SIGKILL, the
// leader cannot release its lease, and the other takes over once it runs
// out, and acts. The etcd operator, scoped to a namespace of the test's own
// so that no other operator of the suite acts there.
func TestLeaderElection(t *testing.T) {
	if suite.Provider != cluster.Local {
		t.Skip("runs two replicas as local processes; on kind each operator runs from its manifests, one replica")
	}
	const lease = "etcd-cluster.operator-workshops.io"
	f := features.New("two replicas of the etcd operator").
		WithSetup("a namespace and two replicas scoped to it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = createNamespace(ctx, t, cfg)
			ns := namespaceOf(ctx)
			names := []string{"leader-a-" + ns, "leader-b-" + ns}
			for _, name := range names {
				if err := suite.StartInstance(ctx, name, "etcd-cluster",
					"--namespace="+ns, "--leader-elect", "--leader-election-namespace="+ns); err != nil {
					t.Fatal(err)
				}
			}
			return context.WithValue(ctx, replicas{}, names)
		}).
		Assess("one replica leads and acts, the other waits", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns, names := namespaceOf(ctx), ctx.Value(replicas{}).([]string)
			applySample(ctx, t, cfg, etcdSample, &etcdv1.EtcdCluster{})
			waitMembers(ctx, t, client(t, cfg), ns, etcdName, 3)
			holder := leaseHolder(ctx, t, cfg, ns, lease)
			// Both replicas run (each logs its attempt to lead), and the
			// controllers of one only have started.
			for _, name := range names {
				waitFor(t, name+" trying to lead", func(context.Context) (bool, error) {
					return strings.Contains(operatorLog(t, name), "Attempting to acquire leader lease"), nil
				})
			}
			var leaders []string
			for _, name := range names {
				if strings.Contains(operatorLog(t, name), "Starting workers") {
					leaders = append(leaders, name)
				}
			}
			if len(leaders) != 1 {
				t.Fatalf("replicas that started their controllers: %v, want one (lease held by %s)", leaders, holder)
			}
			return context.WithValue(ctx, replicas{}, []string{leaders[0], otherThan(names, leaders[0])})
		}).
		Assess("killed, the leader is replaced once its lease runs out, and the new one acts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns, roles := namespaceOf(ctx), ctx.Value(replicas{}).([]string)
			leader, follower := roles[0], roles[1]
			before := leaseHolder(ctx, t, cfg, ns, lease)
			killed := time.Now()
			if err := suite.KillOperator(ctx, leader); err != nil {
				t.Fatal(err)
			}
			var after string
			waitFor(t, "a new holder of the lease", func(ctx context.Context) (bool, error) {
				after = leaseHolder(ctx, t, cfg, ns, lease)
				return after != before && after != "", nil
			})
			took := time.Since(killed)
			t.Logf("lease held by %s, then by %s %.1fs after the SIGKILL", before, after, took.Seconds())
			// The lease runs out leaseDuration after the last renewal, at
			// most retryPeriod before the kill, and the follower tries every
			// retryPeriod; the rest is the test's polling and the API server.
			if bound := leaseDuration + 2*retryPeriod + 3*time.Second; took > bound {
				t.Errorf("the follower led %.1fs after the kill, beyond the lease's bound of %s", took.Seconds(), bound)
			}
			waitFor(t, follower+" starting its controllers", func(context.Context) (bool, error) {
				return strings.Contains(operatorLog(t, follower), "Starting workers"), nil
			})
			second := &etcdv1.EtcdCluster{}
			applySample(ctx, t, cfg, etcdSample, second, func() { second.Name = "second" })
			waitMembers(ctx, t, client(t, cfg), ns, "second", 3)
			return ctx
		}).
		WithTeardown("the replica left and the namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, name := range ctx.Value(replicas{}).([]string) {
				_ = suite.KillOperator(ctx, name) // the one killed above is gone already
			}
			return deleteNamespace(ctx, t, cfg)
		}).Feature()
	testEnv.Test(t, f)
}

// leaseHolder is the holder of the lease named name in ns; empty while there
// is none.
func leaseHolder(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, name string) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := client(t, cfg).Get(ctx, name, ns, &l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// operatorLog is what an operator started by the suite under name has
// logged (bin/logs/e2e-<name>.log).
func operatorLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.Root, "bin", "logs", "e2e-"+name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func otherThan(names []string, name string) string {
	for _, n := range names {
		if n != name {
			return n
		}
	}
	return ""
}
