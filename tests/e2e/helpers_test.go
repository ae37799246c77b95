package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

// waitAllReady waits until n objects of list's kind in namespace ns are
// ready.
func waitAllReady(t *testing.T, r *resources.Resources, ns string, list k8s.ObjectList, n int, ready func(k8s.Object) bool) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d %T items ready", n, list), func(ctx context.Context) (bool, error) {
		if err := r.List(ctx, list, resources.WithFieldSelector("metadata.namespace="+ns)); err != nil {
			return false, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return false, err
		}
		got := 0
		for _, item := range items {
			if ready(item.(k8s.Object)) {
				got++
			}
		}
		return got == n, nil
	})
}

// restartOperator kills operator op (SIGKILL) and starts it again with
// args: other flags, or none to put it back as the suite started it. It
// starts it even when there was none to kill.
func restartOperator(ctx context.Context, op string, args ...string) error {
	killed := suite.KillOperator(ctx, op)
	return errors.Join(killed, suite.StartOperator(ctx, op, args...))
}
