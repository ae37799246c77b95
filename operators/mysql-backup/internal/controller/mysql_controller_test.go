package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

var ctx = context.Background()

// homework returns the homework's cr.yml in namespace ns.
func homework(ns, name string) *mysqlv1.MySQL {
	return &mysqlv1.MySQL{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: mysqlv1.MySQLSpec{
			Image:       "mysql:5.7",
			Database:    "otus-database",
			Password:    "otuspassword",
			StorageSize: resource.MustParse("1Gi"),
		},
	}
}

func create(t *testing.T, m *mysqlv1.MySQL) *mysqlv1.MySQL {
	t.Helper()
	if err := suite.Client.Create(ctx, m); err != nil {
		t.Fatalf("creating MySQL %s: %v", m.Name, err)
	}
	return m
}

func get(t *testing.T, key types.NamespacedName, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("%T %s", obj, key), func(ctx context.Context) error {
		return suite.Client.Get(ctx, key, obj)
	})
}

func key(m *mysqlv1.MySQL, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: m.Namespace, Name: name}
}

// waitCondition waits until m's condition typ has status and reason.
func waitCondition(t *testing.T, m *mysqlv1.MySQL, typ string, status metav1.ConditionStatus, reason string) *mysqlv1.MySQL {
	t.Helper()
	got := &mysqlv1.MySQL{}
	testenv.Eventually(t, fmt.Sprintf("%s %s=%s (%s)", m.Name, typ, status, reason), func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, typ); c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("conditions are %+v", got.Status.Conditions)
		}
		return nil
	})
	return got
}

// serverUp does what the Deployment controller and a kubelet would.
func serverUp(t *testing.T, m *mysqlv1.MySQL) {
	t.Helper()
	d := &appsv1.Deployment{}
	get(t, key(m, m.Name), d)
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas = 1, 1, 1, 1
	if err := suite.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

// finishJob does what the Job controller would when the Job's pod exits;
// report is what the pod wrote to its termination log ("" for nothing).
func finishJob(t *testing.T, m *mysqlv1.MySQL, name string, succeeded bool, report string) {
	t.Helper()
	j := &batchv1.Job{}
	get(t, key(m, name), j)
	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    name + "-",
			Namespace:       m.Namespace,
			Labels:          map[string]string{batchv1.JobNameLabel: name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: j.Spec.Template.Spec,
	}
	if err := suite.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	exit := int32(0)
	if !succeeded {
		exit = 1
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: report, StartedAt: now, FinishedAt: now},
	}}}
	if err := suite.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	j.Status.StartTime = &now
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now}
	}
	if succeeded {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
	}
	if err := suite.Client.Status().Update(ctx, j); err != nil {
		t.Fatalf("finishing Job %s: %v", name, err)
	}
}

// collect deletes what the garbage collector would delete with m: envtest
// runs none.
func collect(t *testing.T, m *mysqlv1.MySQL) {
	t.Helper()
	lists := []client.ObjectList{&batchv1.JobList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{},
		&corev1.PersistentVolumeClaimList{}, &corev1.SecretList{}}
	for _, list := range lists {
		if err := suite.Client.List(ctx, list, client.InNamespace(m.Namespace)); err != nil {
			t.Fatal(err)
		}
		err := meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if !metav1.IsControlledBy(obj, m) {
				return nil
			}
			return client.IgnoreNotFound(suite.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("%T %s to go", obj, obj.GetName()), func(ctx context.Context) error {
		err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, errors.New("still there"))
	})
}

// ready brings a new MySQL to Ready: server up, restore done.
func ready(t *testing.T, m *mysqlv1.MySQL, report string) *mysqlv1.MySQL {
	t.Helper()
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	finishJob(t, m, restoreJobName(m.Name), true, report)
	return waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
}

func TestHomeworkLifecycle(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "mysql-instance"))

	// The homework's children, by the homework's names.
	pvc := &corev1.PersistentVolumeClaim{}
	get(t, key(m, "mysql-instance-pvc"), pvc)
	if !metav1.IsControlledBy(pvc, m) || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("data PVC: owners %v, size %v", pvc.OwnerReferences, pvc.Spec.Resources.Requests.Storage())
	}
	backup := &corev1.PersistentVolumeClaim{}
	get(t, key(m, "backup-mysql-instance-pvc"), backup)
	if len(backup.OwnerReferences) != 0 {
		t.Errorf("the backup PVC must outlive the MySQL, but has owners %v", backup.OwnerReferences)
	}
	d := &appsv1.Deployment{}
	get(t, key(m, "mysql-instance"), d)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Template.Labels["app"] != "mysql-instance" {
		t.Errorf("deployment: replicas %d, strategy %s, pod labels %v", *d.Spec.Replicas, d.Spec.Strategy.Type, d.Spec.Template.Labels)
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Value == "otuspassword" {
			t.Errorf("the password is in clear text in the Deployment's env %s", e.Name)
		}
	}
	get(t, key(m, "mysql-instance"), &corev1.Service{})

	// Restore on create, once the server answers.
	if err := suite.Client.Get(ctx, key(m, "restore-mysql-instance-job"), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the restore Job must wait for the server, got %v", err)
	}
	serverUp(t, m)
	restore := &batchv1.Job{}
	get(t, key(m, "restore-mysql-instance-job"), restore)
	if !metav1.IsControlledBy(restore, m) {
		t.Error("the restore Job is not owned by the MySQL")
	}
	assertNoPassword(t, restore, "otuspassword")
	finishJob(t, m, restore.Name, true, "no-backup")
	got := waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
	if got.Status.Message != "mysql-instance created without restore-job: there was no backup to restore" {
		t.Errorf("message %q", got.Status.Message)
	}

	// Delete: the finalizer holds the MySQL until the backup succeeded.
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	get(t, key(m, "backup-mysql-instance-job"), job)
	if len(job.OwnerReferences) != 0 || job.Annotations[uidAnnotation] != string(m.UID) {
		t.Errorf("backup Job: owners %v, annotations %v", job.OwnerReferences, job.Annotations)
	}
	assertNoPassword(t, job, "otuspassword")
	waitCondition(t, m, BackupSucceeded, metav1.ConditionUnknown, ReasonBackingUp)
	finishJob(t, m, job.Name, true, "backed-up otus-database-20261121T120000Z.sql.gz")
	waitGone(t, m)
	collect(t, m)

	// Recreate: the restore loads the backup; a second delete replaces the
	// first MySQL's succeeded backup Job with its own.
	again := create(t, homework(ns, "mysql-instance"))
	got = ready(t, again, "restored otus-database-20261121T120000Z.sql.gz")
	if got.Status.Message != "mysql-instance created with restore-job" || got.Status.RestoredFrom != "otus-database-20261121T120000Z.sql.gz" {
		t.Errorf("message %q, restoredFrom %q", got.Status.Message, got.Status.RestoredFrom)
	}
	if err := suite.Client.Delete(ctx, again); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "a backup Job of the second MySQL", func(ctx context.Context) error {
		j := &batchv1.Job{}
		if err := suite.Client.Get(ctx, key(again, "backup-mysql-instance-job"), j); err != nil {
			return err
		}
		if j.Annotations[uidAnnotation] != string(again.UID) {
			return errors.New("still the first MySQL's Job")
		}
		return nil
	})
	finishJob(t, again, "backup-mysql-instance-job", true, "")
	waitGone(t, again)
}

func assertNoPassword(t *testing.T, j *batchv1.Job, password string) {
	t.Helper()
	c := j.Spec.Template.Spec.Containers[0]
	if strings.Contains(strings.Join(append(c.Command, c.Args...), " "), password) {
		t.Errorf("Job %s has the password in its command line", j.Name)
	}
	for _, e := range c.Env {
		if e.Value == password {
			t.Errorf("Job %s has the password in clear text in %s", j.Name, e.Name)
		}
	}
}

func TestFailedBackupKeepsTheData(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "precious"))
	ready(t, m, "no-backup")
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	finishJob(t, m, "backup-precious-job", false, "")
	got := waitCondition(t, m, BackupSucceeded, metav1.ConditionFalse, ReasonBackupFailed)
	if msg := meta.FindStatusCondition(got.Status.Conditions, BackupSucceeded).Message; !strings.Contains(msg, "kubectl delete job backup-precious-job") ||
		!strings.Contains(msg, mysqlv1.SkipBackupAnnotation) {
		t.Errorf("the condition should say how to retry and how to skip: %q", msg)
	}
	var events eventsv1.EventList
	if err := suite.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, e := range events.Items {
		warned = warned || (e.Reason == ReasonBackupFailed && e.Type == corev1.EventTypeWarning)
	}
	if !warned {
		t.Error("no BackupFailed warning event")
	}

	// Retry: deleting the failed Job runs the backup again.
	failed := &batchv1.Job{}
	get(t, key(m, "backup-precious-job"), failed)
	if err := suite.Client.Delete(ctx, failed, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "a new backup Job", func(ctx context.Context) error {
		j := &batchv1.Job{}
		if err := suite.Client.Get(ctx, key(m, "backup-precious-job"), j); err != nil {
			return err
		}
		if j.UID == failed.UID {
			return errors.New("still the failed Job")
		}
		return nil
	})
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(m), &mysqlv1.MySQL{}); err != nil {
		t.Fatalf("the MySQL must stay while its backup has not succeeded: %v", err)
	}

	// Skip on purpose: the annotation lets the deletion go on.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+mysqlv1.SkipBackupAnnotation+`":"true"}}}`))
	if err := suite.Client.Patch(ctx, &mysqlv1.MySQL{ObjectMeta: m.ObjectMeta}, patch); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m)
}

func TestPasswordChange(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "rotating"))
	ready(t, m, "no-backup")
	d := &appsv1.Deployment{}
	get(t, key(m, "rotating"), d)
	oldHash := d.Spec.Template.Annotations[passwordHashAnnotation]

	setPassword(t, m, "n3w'pass")
	j := &batchv1.Job{}
	get(t, key(m, "password-rotating-job"), j)
	assertNoPassword(t, j, "n3w'pass")
	assertNoPassword(t, j, "otuspassword")
	newEnv := envNamed(j, scripts.EnvNewPassword)
	if newEnv == nil || newEnv.ValueFrom.SecretKeyRef.Key != keyPendingPassword {
		t.Fatalf("the new password must come from the credentials Secret, got %+v", newEnv)
	}

	// A failure keeps the old password and says so.
	finishJob(t, m, j.Name, false, "")
	waitCondition(t, m, PasswordChanged, metav1.ConditionFalse, ReasonPasswordFailed)
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonPasswordFailed)
	if p := credentials(t, m)[keyPassword]; p != "otuspassword" {
		t.Errorf("after a failed change the credentials say %q, want the old password", p)
	}

	// Deleting the failed Job retries; success moves the Secret on and
	// rolls the server's pod.
	if err := suite.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "a new password Job", func(ctx context.Context) error {
		n := &batchv1.Job{}
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(j), n); err != nil {
			return err
		}
		if n.UID == j.UID {
			return errors.New("still the failed Job")
		}
		return nil
	})
	finishJob(t, m, j.Name, true, "")
	waitCondition(t, m, PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged)
	creds := credentials(t, m)
	if creds[keyPassword] != "n3w'pass" || creds[keyPendingPassword] != "" {
		t.Errorf("credentials after the change: %v", creds)
	}
	testenv.Eventually(t, "the server's pod template to roll", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, key(m, "rotating"), d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations[passwordHashAnnotation] == oldHash {
			return errors.New("same password hash")
		}
		return nil
	})
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionFalse, ReasonReady)
	if strings.Contains(fmt.Sprintf("%+v", got.Status), "n3w'pass") {
		t.Error("the status shows the password")
	}
}

func setPassword(t *testing.T, m *mysqlv1.MySQL, p string) {
	t.Helper()
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.Password = p
	if err := suite.Client.Patch(ctx, m, patch); err != nil {
		t.Fatal(err)
	}
}

func credentials(t *testing.T, m *mysqlv1.MySQL) map[string]string {
	t.Helper()
	s := &corev1.Secret{}
	get(t, key(m, credentialsName(m.Name)), s)
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

func envNamed(j *batchv1.Job, name string) *corev1.EnvVar {
	for i, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return &j.Spec.Template.Spec.Containers[0].Env[i]
		}
	}
	return nil
}

func TestPasswordFromSecret(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := homework(ns, "secretive")
	m.Spec.Password = ""
	m.Spec.PasswordSecretRef = &mysqlv1.SecretKeyRef{Name: "root", Key: "pw"}
	create(t, m)
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonSecretNotFound)
	if err := suite.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns},
		StringData: map[string]string{"pw": "from-a-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	ready(t, m, "no-backup")
	if p := credentials(t, m)[keyPassword]; p != "from-a-secret" {
		t.Errorf("credentials hold %q", p)
	}
}

func TestBadSpecIsRefusedAtAdmission(t *testing.T) {
	ns := suite.Namespace(t, nil)
	cr := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": mysqlv1.GroupVersion.String(),
			"kind":       "MySQL",
			"metadata":   map[string]any{"name": "bad", "namespace": ns},
			"spec":       spec,
		}}
	}
	full := func() map[string]any {
		return map[string]any{"image": "mysql:5.7", "database": "otus-database", "password": "otuspassword", "storage_size": "1Gi"}
	}
	tests := []struct {
		name    string
		edit    func(map[string]any)
		message string
	}{
		{"the homework's useless_data", func(s map[string]any) { s["useless_data"] = "useless info" }, `unknown field "spec.useless_data"`},
		{"no database", func(s map[string]any) { delete(s, "database") }, "spec.database: Required value"},
		{"no image", func(s map[string]any) { delete(s, "image") }, "spec.image: Required value"},
		{"no storage_size", func(s map[string]any) { delete(s, "storage_size") }, "spec.storage_size: Required value"},
		{"no password at all", func(s map[string]any) { delete(s, "password") }, "give exactly one of password and passwordSecretRef"},
		{"both passwords", func(s map[string]any) { s["passwordSecretRef"] = map[string]any{"name": "s"} }, "give exactly one of password and passwordSecretRef"},
		{"a size that is no quantity", func(s map[string]any) { s["storage_size"] = "a lot" }, "spec.storage_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := full()
			tt.edit(spec)
			// kubectl apply asks for strict field validation, as here.
			err := suite.Client.Create(ctx, cr(spec), client.FieldValidation("Strict"))
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an error containing %q, got %v", tt.message, err)
			}
		})
	}
}

// Deleting a namespace deletes the backup volume with the MySQL: there is
// nowhere to keep a backup, and waiting for one would hold the namespace's
// deletion forever.
func TestNamespaceDeletionNeedsNoBackup(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "doomed"))
	ready(t, m, "no-backup")
	backup := &corev1.PersistentVolumeClaim{}
	get(t, key(m, "backup-doomed-pvc"), backup)
	// envtest runs no namespace controller: delete what it would.
	if err := suite.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, backup); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m)
}

// An operator killed between starting a Job and seeing it finish resumes with
// that Job: it neither runs a second restore nor a second backup.
func TestRestartResumesWithTheSameJobs(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "resumed"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	restore := &batchv1.Job{}
	get(t, key(m, "restore-resumed-job"), restore)

	suite.Restart(t)
	finishJob(t, m, restore.Name, true, "restored otus-database-20261121T130000Z.sql.gz")
	got := waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
	if got.Status.RestoredFrom != "otus-database-20261121T130000Z.sql.gz" {
		t.Errorf("restoredFrom %q", got.Status.RestoredFrom)
	}
	assertSameJob(t, restore)

	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	backup := &batchv1.Job{}
	get(t, key(m, "backup-resumed-job"), backup)
	suite.Restart(t)
	waitCondition(t, m, BackupSucceeded, metav1.ConditionUnknown, ReasonBackingUp)
	assertSameJob(t, backup)
	finishJob(t, m, backup.Name, true, "backed-up otus-database-20261121T130500Z.sql.gz")
	waitGone(t, m)
	assertSameJob(t, backup)
}

// assertSameJob fails unless the Job named like j is still j, not a new one.
func assertSameJob(t *testing.T, j *batchv1.Job) {
	t.Helper()
	now := &batchv1.Job{}
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(j), now); err != nil {
		t.Fatalf("Job %s: %v", j.Name, err)
	}
	if now.UID != j.UID {
		t.Errorf("Job %s was replaced by a new one after the restart", j.Name)
	}
}
