//go:build kind

package e2e

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// On kind the server really runs, so the homework's own commands prove that
// its table survives `kubectl delete` and `kubectl apply` through the real
// backup and restore Jobs. Built with -tags kind, run by the kind workflow
// (.github/workflows/kind.yml); the local cluster simulates pods and cannot.
func TestHomeworkTableSurvivesRecreate(t *testing.T) {
	mysql := func(ctx context.Context, t *testing.T, ns, sql string) string {
		t.Helper()
		pod, err := suite.Run(ctx, "kubectl", "get", "pods", "-n", ns, "-l", "app=mysql-instance",
			"-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			t.Fatal(err)
		}
		out, err := suite.Run(ctx, "kubectl", "exec", "-n", ns, strings.TrimSpace(pod), "--",
			"mysql", "-potuspassword", "-e", sql, "otus-database")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	f := features.New("the homework's test table").
		WithSetup("namespace", createNamespace).
		Assess("survives delete and recreate", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			ns := namespaceOf(ctx)
			m := &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", m)
			waitFor(t, "mysql-instance to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			mysql(ctx, t, ns, "CREATE TABLE test ( id smallint unsigned not null auto_increment, name varchar(20) not null, constraint pk_example primary key (id) );")
			mysql(ctx, t, ns, "INSERT INTO test ( id, name ) VALUES ( null, 'some data' );")
			mysql(ctx, t, ns, "INSERT INTO test ( id, name ) VALUES ( null, 'some data-2' );")

			if err := r.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "mysql-instance to go", conditions.New(r).ResourceDeleted(m))
			again := &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", again)
			waitFor(t, "mysql-instance to be Ready again", conditions.New(r).ResourceMatch(again, mysqlReady))
			if again.Status.RestoredFrom == "" {
				t.Errorf("the new MySQL says it restored nothing: %+v", again.Status)
			}
			out := mysql(ctx, t, ns, "select * from test;")
			for _, row := range []string{"1\tsome data\n", "2\tsome data-2\n"} {
				if !strings.Contains(out, row) {
					t.Errorf("select * from test does not show %q:\n%s", row, out)
				}
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}
