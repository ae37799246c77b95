package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// leakChecked are the operators whose logs TestNoPasswordLeaks reads.
var leakChecked = []string{"mysql-backup", "database"}

type passwords struct{}

// The passwords of a MySQL's whole life (created, its password changed,
// deleted with a backup) and of a Database's generated root password appear
// in no operator log line, at -v=7, the highest verbosity the operators
// take, nor in an Event, a status, or a Job's command, arguments or env
// values: Secrets hold them, and pods read them from there.
func TestNoPasswordLeaks(t *testing.T) {
	if suite.Provider != cluster.Local {
		t.Skip("restarts the suite's operators at -v=7 as local processes; on kind they run from their manifests")
	}
	f := features.New("passwords through a MySQL's and a Database's lives").
		WithSetup("a namespace, and the operators at -v=7", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, op := range leakChecked {
				if err := restartOperator(ctx, op, "-v=7"); err != nil {
					t.Fatal(err)
				}
			}
			return createNamespace(ctx, t, cfg)
		}).
		Assess("a MySQL lives and goes, its password changed; a Database with a generated password too", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns, r := namespaceOf(ctx), client(t, cfg)
			first, second := secretWord(t, "first"), secretWord(t, "second")
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "mysql-with-secret-root", Namespace: ns},
				StringData: map[string]string{"password": first},
			}
			if err := r.Create(ctx, secret); err != nil {
				t.Fatal(err)
			}
			m := &mysqlv1.MySQL{
				ObjectMeta: metav1.ObjectMeta{Name: "mysql-with-secret", Namespace: ns},
				Spec: mysqlv1.MySQLSpec{
					Image: "mysql:8.0", Database: "otus-database", StorageSize: resource.MustParse("1Gi"),
					PasswordSecretRef: &mysqlv1.SecretKeyRef{Name: secret.Name},
				},
			}
			if err := r.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the MySQL to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))

			secret.StringData = map[string]string{"password": second}
			if err := r.Update(ctx, secret); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the password Job to be done", func(ctx context.Context) (bool, error) {
				return strings.Contains(namespaceEvents(ctx, t, ns), "reason: PasswordChanged"), nil
			})
			waitFor(t, "the MySQL to be Ready again", conditions.New(r).ResourceMatch(m, mysqlReady))

			db := &dbv1.Database{}
			applySample(ctx, t, cfg, "operators/database/config/samples/mysql-db.yaml", db)
			waitFor(t, "the Database to be Ready", conditions.New(r).ResourceMatch(db, databaseReady))
			generated := &corev1.Secret{}
			if err := r.Get(ctx, db.Status.RootPasswordSecret, ns, generated); err != nil {
				t.Fatal(err)
			}
			plain := []string{first, second}
			for _, v := range generated.Data {
				plain = append(plain, string(v))
			}
			// A Secret's body carries its values in base64: a leak of one
			// (a request body logged) shows that form.
			var words []string
			for _, w := range plain {
				words = append(words, w, base64.StdEncoding.EncodeToString([]byte(w)))
			}
			// The search finds a password where one is.
			if shown := suite.Kubectl(ctx, t, "get", "secret", "-n", ns, secret.Name, "-o", "yaml"); !strings.Contains(shown, words[3]) {
				t.Fatalf("the Secret does not show the second password as base64 %s: the search would find no leak", words[3])
			}

			// The statuses, as they were before the CRs went.
			for _, obj := range []string{"mysql/" + m.Name, "database/" + db.Name} {
				shown := suite.Kubectl(ctx, t, "get", "-n", ns, "-o", "yaml", obj)
				for _, w := range words {
					if strings.Contains(shown, w) {
						t.Errorf("%s shows a password", obj)
					}
				}
			}
			for _, obj := range []k8s.Object{m, db} {
				if err := r.Delete(ctx, obj); err != nil {
					t.Fatal(err)
				}
				waitFor(t, obj.GetName()+" to go", conditions.New(r).ResourceDeleted(obj))
			}
			return context.WithValue(ctx, passwords{}, words)
		}).
		Assess("no log line, Event or Job shows one of the passwords", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns, words := namespaceOf(ctx), ctx.Value(passwords{}).([]string)
			for _, op := range leakChecked {
				log := operatorLog(t, op)
				// -v=7 logs every request with its headers.
				if !strings.Contains(log, `"headers"`) {
					t.Errorf("the %s log holds no request with its headers: is it at -v=7?", op)
				}
				for _, line := range strings.Split(log, "\n") {
					for _, w := range words {
						if strings.Contains(line, w) {
							t.Errorf("the %s operator logged a password: %.300s", op, line)
						}
					}
				}
			}
			events := namespaceEvents(ctx, t, ns)
			var jobs batchv1.JobList
			if err := client(t, cfg).WithNamespace(ns).List(ctx, &jobs); err != nil {
				t.Fatal(err)
			}
			if len(jobs.Items) == 0 || !strings.Contains(events, "reason: BackupSucceeded") && !strings.Contains(events, "reason: BackupUnreported") {
				t.Errorf("%d Jobs and no backup Event: the MySQL's life was not the whole one", len(jobs.Items))
			}
			for _, w := range words {
				if strings.Contains(events, w) {
					t.Errorf("an Event of namespace %s shows a password", ns)
				}
				for _, j := range jobs.Items {
					for _, c := range j.Spec.Template.Spec.Containers {
						shown := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
						for _, e := range c.Env {
							shown += " " + e.Value
						}
						if strings.Contains(shown, w) {
							t.Errorf("Job %s shows a password in its command, arguments or env values", j.Name)
						}
					}
				}
			}
			return ctx
		}).
		WithTeardown("the operators at their usual verbosity, and the namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, op := range leakChecked {
				if err := restartOperator(ctx, op); err != nil {
					t.Error(err)
				}
			}
			return deleteNamespace(ctx, t, cfg)
		}).Feature()
	testEnv.Test(t, f)
}

// secretWord is a password no log could hold by chance.
func secretWord(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b)
}

// namespaceEvents is every Event of ns, as kubectl shows them in YAML.
func namespaceEvents(ctx context.Context, t *testing.T, ns string) string {
	t.Helper()
	return suite.Kubectl(ctx, t, "get", "events", "-n", ns, "-o", "yaml")
}
