package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// namespaceDeletionBound is how long deleting a namespace with one CR of
// each kind may take: the namespace controller's own work, and each
// operator letting its CR go (the MySQL's backup Job cannot be created in a
// namespace being deleted, and the operator must not wait for it).
const namespaceDeletionBound = time.Minute

type etcdInstance struct{}

// kubectl delete namespace, with a CR of each kind in it, finishes: no
// finalizer waits for something the namespace's deletion forbids.
func TestNamespaceDeletionFinishes(t *testing.T) {
	if suite.Provider != cluster.Local {
		t.Skip("runs an etcd operator for the namespace as a local process; on kind each test namespace goes at the end of its test")
	}
	f := features.New("a namespace with a CR of each kind").
		WithSetup("a namespace, an etcd operator for it, and one CR of each kind, Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = createNamespace(ctx, t, cfg)
			ns := namespaceOf(ctx)
			name := "etcd-" + ns
			if err := suite.StartInstance(ctx, name, "etcd-cluster", "--namespace="+ns); err != nil {
				t.Fatal(err)
			}
			ctx = context.WithValue(ctx, etcdInstance{}, name)
			r := client(t, cfg)
			db, g, m := &dbv1.Database{}, &gordonv1.Gordon{}, &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, "operators/database/config/samples/mongo-db.yaml", db)
			applySample(ctx, t, cfg, "operators/gordon/config/samples/gordoncluster.yaml", g)
			applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", m)
			applySample(ctx, t, cfg, etcdSample, &etcdv1.EtcdCluster{})
			waitFor(t, "the Database to be Ready", conditions.New(r).ResourceMatch(db, databaseReady))
			waitFor(t, "the Gordon to be Ready", conditions.New(r).ResourceMatch(g, gordonReady))
			waitFor(t, "the MySQL to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			waitMembers(ctx, t, r, ns, etcdName, 3)
			return ctx
		}).
		Assess("kubectl delete namespace finishes within the bound", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(ctx)}}
			r := client(t, cfg)
			start := time.Now()
			if err := r.Delete(ctx, ns); err != nil {
				t.Fatal(err)
			}
			err := wait.For(func(ctx context.Context) (bool, error) {
				// Other errors are the API server's, and pass.
				return apierrors.IsNotFound(r.Get(ctx, ns.Name, "", &corev1.Namespace{})), nil
			}, wait.WithTimeout(namespaceDeletionBound), wait.WithInterval(250*time.Millisecond))
			if err != nil {
				var left corev1.Namespace
				_ = r.Get(ctx, ns.Name, "", &left)
				t.Fatalf("namespace %s still there %s after its deletion: %v; its conditions: %+v", ns.Name, namespaceDeletionBound, err, left.Status.Conditions)
			}
			t.Logf("namespace %s with a Database, a Gordon, a MySQL and an EtcdCluster deleted in %.1fs", ns.Name, time.Since(start).Seconds())
			return ctx
		}).
		WithTeardown("the etcd operator", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if name, ok := ctx.Value(etcdInstance{}).(string); ok {
				if err := suite.KillOperator(ctx, name); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).Feature()
	testEnv.Test(t, f)
}
