package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// 40 Databases, half mongo and half mysql, converge to exactly one Pod and
// one Service each, and one generated password Secret for each mysql one,
// across two kill -9s of the operator at random points of its work.
func TestDatabasesSurviveOperatorKills(t *testing.T) {
	const databases = 40
	f := features.New("40 Databases across two kills").
		WithSetup("namespace", createNamespace).
		Assess("converge to exactly one Pod, Service and Secret each", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			ns := namespaceOf(ctx)
			// At 2 requests a second of each kind (each kind has its own
			// limit) the operator needs 20 s for the 40 pods: time to kill
			// it in the middle, twice.
			restart := func(args ...string) {
				t.Helper()
				if err := restartOperator(ctx, "database", args...); err != nil {
					t.Fatal(err)
				}
			}
			slow := []string{"--kube-api-qps=2", "--kube-api-burst=2"}
			restart(slow...)
			for i := range databases {
				typ := dbv1.Mongo
				if i%2 == 1 {
					typ = dbv1.MySQL
				}
				db := &dbv1.Database{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db%02d", i), Namespace: ns},
					Spec:       dbv1.DatabaseSpec{Type: typ},
				}
				if err := r.Create(ctx, db); err != nil {
					t.Fatal(err)
				}
			}
			children := func(ctx context.Context, list k8s.ObjectList) (int, error) {
				err := r.List(ctx, list, resources.WithLabelSelector("app.kubernetes.io/managed-by=database-operator"),
					resources.WithFieldSelector("metadata.namespace="+ns))
				return meta.LenList(list), err
			}
			// Two kills, each once a random share of the pods exists.
			low := 0.1
			for kill := range 2 {
				at := low + rand.Float64()*0.3
				waitFor(t, fmt.Sprintf("%.0f%% of the pods", at*100), func(ctx context.Context) (bool, error) {
					n, err := children(ctx, &corev1.PodList{})
					return float64(n) >= at*databases, err
				})
				pods, _ := children(ctx, &corev1.PodList{})
				if kill == 0 {
					restart(slow...)
				} else {
					restart() // at full speed to the end
				}
				t.Logf("kill %d: with %d of %d pods", kill+1, pods, databases)
				if pods >= databases && suite.Provider != "kind" {
					t.Fatalf("the operator had made every pod before kill %d: the test proves nothing", kill+1)
				}
				low = at + 0.1
			}

			start := time.Now()
			waitAllReady(t, r, ns, &dbv1.DatabaseList{}, databases, databaseReady)
			t.Logf("all %d Databases Ready %s after the last restart", databases, time.Since(start).Round(time.Millisecond))
			// Exactly, and still a moment later: nothing made twice, nothing
			// left over.
			for range 3 {
				for _, c := range []struct {
					list k8s.ObjectList
					want int
				}{{&corev1.PodList{}, databases}, {&corev1.ServiceList{}, databases}, {&corev1.SecretList{}, databases / 2}} {
					if n, err := children(ctx, c.list); err != nil || n != c.want {
						t.Fatalf("%d %T items (err %v), want exactly %d", n, c.list, err, c.want)
					}
				}
				time.Sleep(time.Second)
			}
			return ctx
		}).
		WithTeardown("the operator at its usual speed, and the namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// A failure above may have left it at 2 requests a second, which
			// would slow every test after this one.
			if err := restartOperator(ctx, "database"); err != nil {
				t.Error(err)
			}
			return deleteNamespace(ctx, t, cfg)
		}).
		Feature()
	testEnv.Test(t, f)
}
