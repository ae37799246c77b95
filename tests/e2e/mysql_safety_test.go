package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// What a careless or hostile user of the namespace can do to a MySQL, with
// the cluster's own controllers (Deployments, ReplicaSets, Jobs, volume
// protection, garbage collection) at work. The real node shows the data
// itself (tests/realnode); here pods are simulated.

const mysqlSample = "operators/mysql-backup/config/samples/mysql-instance.yaml"

// mysqlCondition is a wait for m's condition typ with reason.
func mysqlCondition(typ, reason string) func(k8s.Object) bool {
	return func(o k8s.Object) bool {
		c := meta.FindStatusCondition(o.(*mysqlv1.MySQL).Status.Conditions, typ)
		return c != nil && c.Reason == reason
	}
}

// jobEnv is the value of env var name of Job j's container, "" if unset.
func jobEnv(j *batchv1.Job, name string) string {
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// deleteMySQL deletes m and waits until it is gone.
func deleteMySQL(ctx context.Context, t *testing.T, r *resources.Resources, m *mysqlv1.MySQL) {
	t.Helper()
	if err := r.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m.Name+" to go", conditions.New(r).ResourceDeleted(m))
}

// noJob fails t if Job name exists in namespace ns.
func noJob(ctx context.Context, t *testing.T, r *resources.Resources, ns, name string) {
	t.Helper()
	if err := r.Get(ctx, name, ns, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("Job %s: %v, want none", name, err)
	}
}

// A claim with the backup volume's name that the operator did not make for
// the MySQL's backups (here MySQL backup-n's data volume, backup-n-pvc, in
// the way of n's backup volume) is never written to or read from, and the
// MySQL says so without advising to delete it.
func TestMySQLBackupVolumeNameTaken(t *testing.T) {
	f := features.New("a claim named like the backup volume").
		WithSetup("namespace", createNamespace).
		Assess("is a NameConflict, and nothing runs against it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			other, n := &mysqlv1.MySQL{}, &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, mysqlSample, other, func() { other.Name = "backup-n" })
			waitFor(t, "backup-n to be Ready", conditions.New(r).ResourceMatch(other, mysqlReady))
			applySample(ctx, t, cfg, mysqlSample, n, func() { n.Name = "n" })
			waitFor(t, "n to say NameConflict", conditions.New(r).ResourceMatch(n, mysqlCondition("Degraded", "NameConflict")))
			msg := meta.FindStatusCondition(n.Status.Conditions, "Degraded").Message
			if !strings.Contains(msg, "backup-n-pvc") || !strings.Contains(msg, "keep it") || strings.Contains(strings.ToLower(msg), "delete") {
				t.Errorf("Degraded says %q", msg)
			}
			noJob(ctx, t, r, n.Namespace, "restore-n-job")
			deleteMySQL(ctx, t, r, n)
			noJob(ctx, t, r, n.Namespace, "backup-n-job")
			if err := r.Get(ctx, "backup-n-pvc", n.Namespace, &corev1.PersistentVolumeClaim{}); err != nil {
				t.Errorf("backup-n's data volume: %v", err)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// A pod that wears the server's labels, and runs before the server does,
// never receives a restore or gives a backup: the Jobs address the pod of
// the operator's Deployment.
func TestMySQLJobsAddressTheOwnedPod(t *testing.T) {
	f := features.New("a pod wearing the server's labels").
		WithSetup("namespace", createNamespace).
		Assess("is never a Job's server", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			m := &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, mysqlSample, m)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}}
			waitFor(t, "the server's Deployment", conditions.New(r).ResourceMatch(d, func(k8s.Object) bool { return true }))
			impostor := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "impostor", Namespace: m.Namespace, Labels: d.Spec.Template.Labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mysql", Image: m.Spec.Image}}},
			}
			if err := r.Create(ctx, impostor); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "mysql-instance to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			if err := r.Get(ctx, impostor.Name, impostor.Namespace, impostor); err != nil {
				t.Fatal(err)
			}
			var server corev1.PodList
			if err := r.List(ctx, &server, func(o *metav1.ListOptions) { o.LabelSelector = "app=mysql-instance,pod-template-hash" }); err != nil || len(server.Items) != 1 {
				t.Fatalf("the server's pod: %v (%d)", err, len(server.Items))
			}
			restore := &batchv1.Job{}
			if err := r.Get(ctx, "restore-mysql-instance-job", m.Namespace, restore); err != nil {
				t.Fatal(err)
			}
			// The restore loaded into the server's first pod, which its
			// Deployment replaced once it served (its pods are labelled
			// for the Service then).
			if host := jobEnv(restore, "MYSQL_HOST"); host == "" || host == impostor.Status.PodIP {
				t.Errorf("the restore Job's server is %q; the impostor is at %s", host, impostor.Status.PodIP)
			}
			deleteMySQL(ctx, t, r, m)
			backup := &batchv1.Job{}
			if err := r.Get(ctx, "backup-mysql-instance-job", m.Namespace, backup); err != nil {
				t.Fatal(err)
			}
			if host := jobEnv(backup, "MYSQL_HOST"); host != server.Items[0].Status.PodIP {
				t.Errorf("the backup Job's server is %s, not the server's pod at %s", host, server.Items[0].Status.PodIP)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// A MySQL whose server never started (its volume can never bind: the class
// does not exist) holds nothing to back up: it goes at once.
func TestMySQLNeverStartedGoesAtOnce(t *testing.T) {
	f := features.New("a MySQL whose server never started").
		WithSetup("namespace", createNamespace).
		Assess("goes at once, without a backup Job", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			m := &mysqlv1.MySQL{}
			noSuchClass := "no-such-class"
			applySample(ctx, t, cfg, mysqlSample, m, func() { m.Spec.StorageClassName = &noSuchClass })
			waitFor(t, "the operator to wait for the server", conditions.New(r).ResourceMatch(m, mysqlCondition("Ready", "ServerStarting")))
			deleteMySQL(ctx, t, r, m)
			noJob(ctx, t, r, m.Namespace, "backup-mysql-instance-job")
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// A data volume deleted under the running server: the MySQL says so while
// the volume protection holds it; once the server's pod is gone with it,
// the new volume is restored again and nobody is told it holds the data
// before; a status forged meanwhile changes nothing the backup expects.
func TestMySQLDataVolumeDeletedUnderTheServer(t *testing.T) {
	f := features.New("a data volume deleted under the server").
		WithSetup("namespace", createNamespace).
		Assess("is Degraded, then restored again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			m := &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, mysqlSample, m)
			waitFor(t, "mysql-instance to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			first := &batchv1.Job{}
			if err := r.Get(ctx, "restore-mysql-instance-job", m.Namespace, first); err != nil {
				t.Fatal(err)
			}
			if _, err := suite.Run(ctx, "kubectl", "delete", "pvc", "-n", m.Namespace, "mysql-instance-pvc", "--wait=false"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "Degraded=DataVolumeDeleted", conditions.New(r).ResourceMatch(m, mysqlCondition("Degraded", "DataVolumeDeleted")))
			if _, err := suite.Run(ctx, "kubectl", "delete", "pods", "-n", m.Namespace, "-l", "app=mysql-instance", "--wait=false"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a new restore Job", conditions.New(r).ResourceMatch(&batchv1.Job{ObjectMeta: first.ObjectMeta}, func(o k8s.Object) bool {
				return o.GetUID() != first.UID
			}))
			waitFor(t, "mysql-instance to be Ready again", conditions.New(r).ResourceMatch(m, mysqlReady))
			if c := meta.FindStatusCondition(m.Status.Conditions, "Degraded"); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("Degraded after the new volume's restore: %+v", c)
			}
			out, err := suite.Run(ctx, "kubectl", "get", "events", "-n", m.Namespace, "--field-selector=reason=DataVolumeReplaced", "-o", "name")
			if err != nil || strings.TrimSpace(out) == "" {
				t.Errorf("no DataVolumeReplaced event: %v %s", err, out)
			}

			// A forged restoredFrom does not become what the backup expects.
			if _, err := suite.Run(ctx, "kubectl", "patch", "mysql", "-n", m.Namespace, m.Name, "--subresource=status", "--type=merge",
				"-p", `{"status":{"restoredFrom":"forged.sql.gz"}}`); err != nil {
				t.Fatal(err)
			}
			deleteMySQL(ctx, t, r, m)
			backup := &batchv1.Job{}
			if err := r.Get(ctx, "backup-mysql-instance-job", m.Namespace, backup); err != nil {
				t.Fatal(err)
			}
			if got := jobEnv(backup, "LATEST_EXPECTED"); got == "forged.sql.gz" {
				t.Errorf("the backup expects latest to name the forged %s", got)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}
