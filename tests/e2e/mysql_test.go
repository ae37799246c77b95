package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

func mysqlReady(obj k8s.Object) bool {
	return meta.IsStatusConditionTrue(obj.(*mysqlv1.MySQL).Status.Conditions, "Ready")
}

func jobComplete(obj k8s.Object) bool {
	for _, c := range obj.(*batchv1.Job).Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// The homework's sequence: apply cr.yml, restore Job, Ready, delete, backup
// Job 1/1, children gone but the backup volume, recreate, restore again.
func TestHomeworkMySQL(t *testing.T) {
	m := &mysqlv1.MySQL{}
	f := features.New("the homework's mysql-instance").
		WithSetup("namespace", createNamespace).
		Assess("kubectl apply refuses the homework's useless_data, naming it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			sample, err := os.ReadFile(filepath.Join(suite.Root, "operators/mysql-backup/config/samples/mysql-instance.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(t.TempDir(), "cr.yml")
			if err := os.WriteFile(bad, append(sample, []byte("  useless_data: \"useless info\"\n")...), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := suite.Run(ctx, "kubectl", "apply", "-n", namespaceOf(ctx), "-f", bad)
			if err == nil || !strings.Contains(out, `unknown field "spec.useless_data"`) {
				t.Fatalf("kubectl apply should fail naming useless_data, got %v:\n%s", err, out)
			}
			return ctx
		}).
		Assess("cr.yml gives a Ready MySQL after its restore Job", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", m)
			waitFor(t, "mysql-instance to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			restore := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "restore-mysql-instance-job", Namespace: m.Namespace}}
			waitFor(t, "restore-mysql-instance-job to complete", conditions.New(r).ResourceMatch(restore, jobComplete))
			for _, name := range []string{"mysql-instance-pvc", "backup-mysql-instance-pvc"} {
				pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.Namespace}}
				waitFor(t, name+" to be Bound", conditions.New(r).ResourceMatch(pvc, func(o k8s.Object) bool {
					return o.(*corev1.PersistentVolumeClaim).Status.Phase == corev1.ClaimBound
				}))
			}
			var pods corev1.PodList
			if err := r.List(ctx, &pods, func(o *metav1.ListOptions) { o.LabelSelector = "app=mysql-instance" }); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 1 {
				t.Errorf("kubectl get pods -l app=mysql-instance finds %d pods, want 1", len(pods.Items))
			}
			return ctx
		}).
		Assess("kubectl delete runs backup-mysql-instance-job to 1/1 and keeps the backup volume", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			deleteMySQL(ctx, t, r, m)
			backup := &batchv1.Job{}
			if err := r.Get(ctx, "backup-mysql-instance-job", m.Namespace, backup); err != nil {
				t.Fatalf("kubectl get jobs should show backup-mysql-instance-job: %v", err)
			}
			if backup.Status.Succeeded != 1 {
				t.Errorf("backup-mysql-instance-job has %d/1 completions", backup.Status.Succeeded)
			}
			gone := metav1.ObjectMeta{Name: "mysql-instance", Namespace: m.Namespace}
			waitFor(t, "the Deployment to go", conditions.New(r).ResourceDeleted(&appsv1.Deployment{ObjectMeta: gone}))
			waitFor(t, "the Service to go", conditions.New(r).ResourceDeleted(&corev1.Service{ObjectMeta: gone}))
			waitFor(t, "the data volume to go", conditions.New(r).ResourceDeleted(&corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "mysql-instance-pvc", Namespace: m.Namespace}}))
			if err := r.Get(ctx, "backup-mysql-instance-pvc", m.Namespace, &corev1.PersistentVolumeClaim{}); err != nil {
				t.Errorf("the backup volume must stay: %v", err)
			}
			return ctx
		}).
		Assess("kubectl apply again restores and is Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			again := &mysqlv1.MySQL{}
			applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", again)
			waitFor(t, "mysql-instance to be Ready again", conditions.New(r).ResourceMatch(again, mysqlReady))
			if !strings.Contains(again.Status.Message, "created with restore-job") {
				t.Errorf("message %q", again.Status.Message)
			}
			// The status says what the restore Job's pod reported, and
			// claims nothing it did not: on a fake node the pod runs no
			// script and reports nothing (tests/realnode proves a real
			// restore, with the data).
			report := restoreReport(ctx, t, cfg, again)
			restored := meta.FindStatusCondition(again.Status.Conditions, "Restored")
			switch {
			case restored == nil || restored.Status != metav1.ConditionTrue:
				t.Errorf("Ready without Restored=True: %+v", restored)
			case report == "" && (restored.Reason != "RestoreUnreported" || again.Status.RestoredFrom != ""):
				t.Errorf("the restore Job reported nothing, yet the status says %s (%s), restoredFrom %q",
					restored.Reason, restored.Message, again.Status.RestoredFrom)
			case report == "":
				t.Logf("the restore ran on a fake node, which runs no script: Restored says %s", restored.Reason)
			case restored.Reason == "RestoreUnreported":
				t.Errorf("the restore Job reported %q, yet the status says it did not", report)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// restoreReport returns what the pod of m's restore Job wrote to its
// termination log, "" when it wrote nothing.
func restoreReport(ctx context.Context, t *testing.T, cfg *envconf.Config, m *mysqlv1.MySQL) string {
	t.Helper()
	var pods corev1.PodList
	if err := client(t, cfg).List(ctx, &pods, resources.WithLabelSelector(batchv1.JobNameLabel+"=restore-"+m.Name+"-job"),
		resources.WithFieldSelector("metadata.namespace="+m.Namespace)); err != nil {
		t.Fatal(err)
	}
	report := ""
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil && term.Message != "" {
				report = term.Message
			}
		}
	}
	return report
}

// A backup that cannot succeed keeps the MySQL and says why, until an
// administrator says the data may go. Here the backup volume can never bind
// (it was made with a storage class that does not exist), so the backup Job
// runs out of time.
func TestFailedBackupKeepsTheMySQL(t *testing.T) {
	m := &mysqlv1.MySQL{}
	f := features.New("a MySQL whose backup fails").
		WithSetup("namespace", createNamespace).
		WithSetup("an operator that gives Jobs 10 seconds", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := suite.KillOperator(ctx, "mysql-backup"); err != nil {
				t.Fatal(err)
			}
			if err := suite.StartOperator(ctx, "mysql-backup", "--job-deadline=10s"); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("stays after kubectl delete, with a condition and an event that say why", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			noSuchClass := "no-such-class"
			// The backup volume of an earlier MySQL of the same name, as
			// the operator makes it, on a class no volume can come from.
			backupVolume := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "backup-mysql-instance-pvc", Namespace: namespaceOf(ctx),
					Annotations: map[string]string{"otus.homework/backup-of": "mysql-instance"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &noSuchClass,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}
			if err := r.Create(ctx, backupVolume); err != nil {
				t.Fatal(err)
			}
			applySample(ctx, t, cfg, mysqlSample, m)
			// The server runs (its own volume binds); the restore, which
			// needs the backup volume, cannot.
			waitFor(t, "the restore to fail", conditions.New(r).ResourceMatch(m, mysqlCondition("Restored", "RestoreFailed")))
			if err := r.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "BackupSucceeded=False (BackupFailed)", conditions.New(r).ResourceMatch(m, func(o k8s.Object) bool {
				c := meta.FindStatusCondition(o.(*mysqlv1.MySQL).Status.Conditions, "BackupSucceeded")
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "BackupFailed"
			}))
			out, err := suite.Run(ctx, "kubectl", "describe", "mysql", "-n", m.Namespace, m.Name)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"BackupFailed", "kubectl delete job backup-mysql-instance-job", mysqlv1.SkipBackupAnnotation} {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl describe does not say %q:\n%s", want, out)
				}
			}
			if err := r.Get(ctx, "mysql-instance", m.Namespace, &appsv1.Deployment{}); err != nil {
				t.Errorf("the server must stay while its data is not backed up: %v", err)
			}
			return ctx
		}).
		Assess("goes when an administrator annotates it skip-backup", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			if _, err := suite.Run(ctx, "kubectl", "annotate", "mysql", "-n", m.Namespace, m.Name, mysqlv1.SkipBackupAnnotation+"=true"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "mysql-instance to go", conditions.New(r).ResourceDeleted(m))
			return ctx
		}).
		WithTeardown("the operator as it was", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := restartOperator(ctx, "mysql-backup"); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// A server pod the cluster refuses (here an administrator's policy on its
// image) is told on the MySQL, with the API server's message, from its
// Deployment's ReplicaFailure condition, which kube-controller-manager sets
// when the ReplicaSet cannot create the pod; once a person gives it an image
// the policy admits, the MySQL is restored and Ready.
func TestRefusedServerPodIsTold(t *testing.T) {
	const refused = "mysql:refused"
	m := &mysqlv1.MySQL{}
	f := features.New("a MySQL whose server's pod a policy refuses").
		WithSetup("namespace", createNamespace).
		WithSetup("a policy refusing "+refused, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			testenv.Refuse(t, client(t, cfg).GetControllerRuntimeClient(), namespaceOf(ctx), refused)
			return ctx
		}).
		Assess("Degraded says the policy's message, and a new image makes it Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			image := ""
			applySample(ctx, t, cfg, mysqlSample, m, func() { image, m.Spec.Image = m.Spec.Image, refused })
			waitFor(t, "Degraded=True (Refused) with the policy's message", conditions.New(r).ResourceMatch(m, func(o k8s.Object) bool {
				c := meta.FindStatusCondition(o.(*mysqlv1.MySQL).Status.Conditions, "Degraded")
				return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "Refused" &&
					strings.Contains(c.Message, "the image "+refused+" is not allowed here")
			}))
			patch := k8s.Patch{PatchType: types.MergePatchType, Data: []byte(fmt.Sprintf(`{"spec":{"image":%q}}`, image))}
			if err := r.Patch(ctx, m, patch); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			if c := meta.FindStatusCondition(m.Status.Conditions, "Degraded"); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("Ready, and Degraded is %+v", c)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// Whatever the propagation policy of `kubectl delete` (Argo CD deletes in
// the foreground), the server, its data volume, its Service and its
// credentials stay until the backup succeeded; then the operator deletes
// them itself. The operator is killed while the garbage collector acts, so
// that only owner references decide what the collector takes.
func TestDeletionNeverOutrunsTheBackup(t *testing.T) {
	for _, cascade := range []string{"foreground", "background", "orphan"} {
		m := &mysqlv1.MySQL{}
		f := features.New("kubectl delete --cascade="+cascade).
			WithSetup("namespace", createNamespace).
			Assess("the MySQL's objects outlive it until its backup succeeded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				r := client(t, cfg)
				applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", m)
				waitFor(t, "mysql-instance to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
				kept := keptObjects(m.Namespace)
				if err := suite.KillOperator(ctx, "mysql-backup"); err != nil {
					t.Fatal(err)
				}
				started := false
				defer func() {
					if !started {
						_ = suite.StartOperator(ctx, "mysql-backup")
					}
				}()
				if _, err := suite.Run(ctx, "kubectl", "delete", "-n", m.Namespace, "mysql", m.Name, "--cascade="+cascade, "--wait=false"); err != nil {
					t.Fatal(err)
				}
				// Wait until the garbage collector did what this policy
				// makes it do to the MySQL's dependents, then look at them.
				restore := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "restore-mysql-instance-job", Namespace: m.Namespace}}
				switch cascade {
				case "foreground":
					waitFor(t, "the collector to delete the restore Job, which the MySQL owns", conditions.New(r).ResourceDeleted(restore))
				case "orphan":
					waitFor(t, "the collector to orphan the restore Job", conditions.New(r).ResourceMatch(restore, func(o k8s.Object) bool {
						return len(o.GetOwnerReferences()) == 0
					}))
				}
				// What holds the MySQL, and so the objects the collector would
				// take with it (background) or from it, is its finalizer, while
				// the operator is away: the check that can fail whatever the
				// policy (without the finalizer the MySQL is gone at once).
				held := &mysqlv1.MySQL{}
				if err := r.Get(ctx, m.Name, m.Namespace, held); err != nil || !slices.Contains(held.Finalizers, "otus.homework/backup") {
					t.Fatalf("the MySQL is not held for its backup while the operator is away: %v, finalizers %v", err, held.Finalizers)
				}
				// In the foreground the collector has deleted what it would
				// (the restore Job): what it must not take is still there.
				for _, obj := range kept {
					if err := r.Get(ctx, obj.GetName(), obj.GetNamespace(), obj); err != nil || obj.GetDeletionTimestamp() != nil {
						t.Errorf("%T %s is deleted before the backup: %v, deletion %v", obj, obj.GetName(), err, obj.GetDeletionTimestamp())
					}
				}
				if err := suite.StartOperator(ctx, "mysql-backup"); err != nil {
					t.Fatal(err)
				}
				started = true
				waitFor(t, "mysql-instance to go", conditions.New(r).ResourceDeleted(m))
				backup := &batchv1.Job{}
				if err := r.Get(ctx, "backup-mysql-instance-job", m.Namespace, backup); err != nil || backup.Status.Succeeded != 1 {
					t.Fatalf("the MySQL went without a succeeded backup Job: %v, %d succeeded", err, backup.Status.Succeeded)
				}
				for _, obj := range kept {
					waitFor(t, fmt.Sprintf("the operator to delete %T %s", obj, obj.GetName()), conditions.New(r).ResourceDeleted(obj))
				}
				if err := r.Get(ctx, "backup-mysql-instance-pvc", m.Namespace, &corev1.PersistentVolumeClaim{}); err != nil {
					t.Errorf("the backup volume must stay: %v", err)
				}
				return ctx
			}).
			WithTeardown("namespace", deleteNamespace).
			Feature()
		testEnv.Test(t, f)
	}
}

// keptObjects are the objects of MySQL mysql-instance in ns that must
// outlive it until its backup is done.
func keptObjects(ns string) []k8s.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	return []k8s.Object{
		&appsv1.Deployment{ObjectMeta: meta("mysql-instance")},
		&corev1.Service{ObjectMeta: meta("mysql-instance")},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("mysql-instance-pvc")},
		&corev1.Secret{ObjectMeta: meta("mysql-instance-credentials")},
	}
}

// The Service reaches the server and nothing else: no Job's pod is ever
// among its endpoints. On fake nodes a Job's pod completes at once, so a pod
// labelled as the restore Job's pods are, that keeps running, stands in for
// a Job's pod at work. The real node shows that no client reaches a server
// before its restore is done (tests/realnode).
func TestServiceEndpointsAreTheServerOnly(t *testing.T) {
	m := &mysqlv1.MySQL{}
	f := features.New("the Service's endpoints").
		WithSetup("namespace", createNamespace).
		Assess("hold the server's pod only, while a Job's pod runs", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg).WithNamespace(namespaceOf(ctx))
			applySample(ctx, t, cfg, "operators/mysql-backup/config/samples/mysql-instance.yaml", m)
			waitFor(t, "mysql-instance to be Ready", conditions.New(r).ResourceMatch(m, mysqlReady))
			restore := &batchv1.Job{}
			if err := r.Get(ctx, "restore-mysql-instance-job", m.Namespace, restore); err != nil {
				t.Fatal(err)
			}
			jobPod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "like-a-job", Namespace: m.Namespace, Labels: restore.Spec.Template.Labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "job", Image: m.Spec.Image}}},
			}
			if err := r.Create(ctx, jobPod); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the Job-like pod to run", conditions.New(r).PodRunning(jobPod))
			var server corev1.PodList
			if err := r.List(ctx, &server, resources.WithLabelSelector("app=mysql-instance")); err != nil || len(server.Items) != 1 {
				t.Fatalf("the server's pod: %v (%d)", err, len(server.Items))
			}
			// A Service of the test's own that selects the Job-like pod shows
			// when the endpoints controller has seen it running.
			probe := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: m.Namespace},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app.kubernetes.io/component": jobPod.Labels["app.kubernetes.io/component"]},
					Ports:    []corev1.ServicePort{{Port: 3306}},
				},
			}
			if err := r.Create(ctx, probe); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the endpoints controller to see the Job-like pod", func(ctx context.Context) (bool, error) {
				targets, err := endpointsOf(ctx, r, "probe")
				return len(targets) == 1 && targets[0] == jobPod.Name, err
			})
			targets, err := endpointsOf(ctx, r, "mysql-instance")
			if err != nil {
				t.Fatal(err)
			}
			if len(targets) != 1 || targets[0] != server.Items[0].Name {
				t.Errorf("the Service mysql-instance has endpoints %v, want the server's pod %s alone", targets, server.Items[0].Name)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// endpointsOf returns the names of the pods behind Service name.
func endpointsOf(ctx context.Context, r *resources.Resources, name string) ([]string, error) {
	var slices discoveryv1.EndpointSliceList
	if err := r.List(ctx, &slices, resources.WithLabelSelector(discoveryv1.LabelServiceName+"="+name)); err != nil {
		return nil, err
	}
	var targets []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil {
				targets = append(targets, e.TargetRef.Name)
			}
		}
	}
	return targets, nil
}
