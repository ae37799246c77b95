package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/e2e-framework/klient/decoder"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// timeout bounds every wait of the e2e suites.
const timeout = 2 * time.Minute

type nsKey struct{}

// client returns a client of the suite's cluster that knows the operators'
// types.
func client(t *testing.T, cfg *envconf.Config) *resources.Resources {
	t.Helper()
	r, err := resources.New(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{dbv1.AddToScheme, etcdv1.AddToScheme, gordonv1.AddToScheme, mysqlv1.AddToScheme} {
		if err := add(r.GetScheme()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// createNamespace gives a feature a namespace of its own; deleteNamespace
// removes it.
func createNamespace(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := client(t, cfg).Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return context.WithValue(ctx, nsKey{}, ns.Name)
}

func deleteNamespace(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(ctx)}}
	if err := client(t, cfg).Delete(ctx, ns); err != nil {
		t.Error(err)
	}
	return ctx
}

func namespaceOf(ctx context.Context) string { return ctx.Value(nsKey{}).(string) }

// applySample creates a sample manifest of the repository, unchanged but for
// its namespace and the edits, as `kubectl apply -f` would.
func applySample(ctx context.Context, t *testing.T, cfg *envconf.Config, path string, obj k8s.Object, edits ...func()) {
	t.Helper()
	dir, file := filepath.Split(filepath.Join(suite.Root, path))
	if err := decoder.DecodeFile(os.DirFS(dir), file, obj, decoder.MutateNamespace(namespaceOf(ctx))); err != nil {
		t.Fatal(err)
	}
	for _, edit := range edits {
		edit()
	}
	if err := client(t, cfg).Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", path, err)
	}
}

// waitFor waits for a condition of the e2e-framework's wait package.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.For(cond, wait.WithTimeout(timeout), wait.WithInterval(250*time.Millisecond)); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
