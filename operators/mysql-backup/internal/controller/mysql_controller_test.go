package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/labels"
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

// is is the status and reason one condition should have.
type is struct {
	status metav1.ConditionStatus
	reason string
}

// waitSummary waits until Ready, Progressing and Degraded are all three as
// wanted: the summary of one step, recomputed on every pass, with no
// condition left behind by an earlier step.
func waitSummary(t *testing.T, m *mysqlv1.MySQL, ready, progressing, degraded is) *mysqlv1.MySQL {
	t.Helper()
	got := &mysqlv1.MySQL{}
	want := map[string]is{conditions.Ready: ready, conditions.Progressing: progressing, conditions.Degraded: degraded}
	testenv.Eventually(t, fmt.Sprintf("%s Ready/Progressing/Degraded %v", m.Name, want), func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		for typ, w := range want {
			if c := meta.FindStatusCondition(got.Status.Conditions, typ); c == nil || c.Status != w.status || c.Reason != w.reason {
				return fmt.Errorf("conditions are %+v", got.Status.Conditions)
			}
		}
		return nil
	})
	return got
}

var (
	upToDate  = is{metav1.ConditionFalse, conditions.ReasonUpToDate}
	noProblem = is{metav1.ConditionFalse, conditions.ReasonNoProblem}
	serves    = is{metav1.ConditionTrue, ReasonReady}
)

// serverUp does what the Deployment controller and a kubelet would: a
// server pod whose container answers, and the Deployment's status for the
// template it has now.
func serverUp(t *testing.T, m *mysqlv1.MySQL) {
	t.Helper()
	d, _ := serverRuns(t, m, true)
	deploymentAvailable(t, d)
}

// serverRuns creates a server pod of m that runs at serverIP, its container
// ready or not, and returns the Deployment and the pod.
func serverRuns(t *testing.T, m *mysqlv1.MySQL, ready bool) (*appsv1.Deployment, *corev1.Pod) {
	t.Helper()
	containers := corev1.ConditionFalse
	if ready {
		containers = corev1.ConditionTrue
	}
	d, pod := serverPod(t, m)
	// The operator may label the new pod (serving) between its creation
	// and this write: the kubelet's status write is read-modify-write too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.PodIP = serverIP
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: containers}}
		return suite.Client.Status().Update(ctx, pod)
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, pod
}

// serverPod creates a ReplicaSet of m's Deployment and its pod, as the
// Deployment and ReplicaSet controllers would, and binds the data volume,
// as the volume controller would for the pod; it returns the Deployment
// and the pod.
func serverPod(t *testing.T, m *mysqlv1.MySQL) (*appsv1.Deployment, *corev1.Pod) {
	t.Helper()
	d := &appsv1.Deployment{}
	get(t, key(m, m.Name), d)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: m.Name + "-", Namespace: m.Namespace, Labels: d.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: d.Spec.Selector, Template: d.Spec.Template},
	}
	if err := suite.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: rs.Name + "-", Namespace: m.Namespace, Labels: d.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))},
		},
		Spec: d.Spec.Template.Spec,
	}
	if err := suite.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	get(t, key(m, dataPVCName(m.Name)), pvc)
	if pvc.Status.Phase != corev1.ClaimBound {
		pvc.Status.Phase = corev1.ClaimBound
		if err := suite.Client.Status().Update(ctx, pvc); err != nil {
			t.Fatal(err)
		}
	}
	return d, pod
}

// serverIP is the address of the test's server pods.
const serverIP = "10.0.0.7"

// testServer is a server pod, for the Job builders' tests.
var testServer = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "pod-uid"}, Status: corev1.PodStatus{PodIP: serverIP}}

// testJobs are the Job settings of the unit tests.
var testJobs = jobOptions{deadline: time.Minute, requests: DefaultJobRequests}

// deploymentAvailable does what the Deployment controller would once d's
// current template runs.
func deploymentAvailable(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas = 1, 1, 1, 1
	if err := suite.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

// serving waits for the server's pods to be labelled for the Service (the
// restore is done) and checks that the restore left the server's template
// as it was: it restarts no server.
func serving(t *testing.T, m *mysqlv1.MySQL) {
	t.Helper()
	testenv.Eventually(t, "the server's pods to be labelled for the Service", func(ctx context.Context) error {
		server := serverPodsOf(t, m)
		if len(server) == 0 {
			return errors.New("no server pod")
		}
		for _, p := range server {
			if p.Labels[servingLabel] != "true" {
				return fmt.Errorf("pod %s has labels %v", p.Name, p.Labels)
			}
		}
		return nil
	})
	d := &appsv1.Deployment{}
	get(t, key(m, m.Name), d)
	if d.Spec.Template.Labels[servingLabel] != "" {
		t.Errorf("the restore changed the server's template, which restarts it: labels %v", d.Spec.Template.Labels)
	}
	deploymentAvailable(t, d)
}

// notServing waits until no pod of m's server is labelled for the Service:
// the operator takes off a label that is not (or no longer) true.
func notServing(t *testing.T, m *mysqlv1.MySQL, why string) {
	t.Helper()
	testenv.Eventually(t, why+": no server pod labelled for the Service", func(context.Context) error {
		for _, p := range serverPodsOf(t, m) {
			if p.Labels[servingLabel] != "" {
				return fmt.Errorf("pod %s has labels %v", p.Name, p.Labels)
			}
		}
		return nil
	})
}

// serverPodsOf lists the pods of m's server that are not being deleted.
func serverPodsOf(t *testing.T, m *mysqlv1.MySQL) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := suite.Client.List(ctx, &list, client.InNamespace(m.Namespace), client.MatchingLabels(serverSelector(m))); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// finishJob does what the Job controller would when the Job's pod exits;
// report is what the pod wrote to its termination log ("" for nothing).
func finishJob(t *testing.T, m *mysqlv1.MySQL, name string, succeeded bool, report string) {
	t.Helper()
	j := &batchv1.Job{}
	get(t, key(m, name), j)
	now := metav1.Now()
	// The Job controller's pod: the template's labels and the Job's name.
	labels := maps.Clone(j.Spec.Template.Labels)
	labels[batchv1.JobNameLabel] = name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    name + "-",
			Namespace:       m.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: j.Spec.Template.Spec,
	}
	if err := suite.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	bind(t, key(m, backupPVCName(m.Name)))
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

// bind binds the claim at k, if there is one, as the volume controller
// would for a pod that mounts it.
func bind(t *testing.T, k types.NamespacedName) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := suite.Client.Get(ctx, k, pvc); apierrors.IsNotFound(err) || pvc.Status.Phase == corev1.ClaimBound {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	if err := suite.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

// finishBackup finishes m's backup Job with report, and then, when the
// report names a dump, the verify Job the operator starts to check it; it
// returns the verify Job (nil for none).
func finishBackup(t *testing.T, m *mysqlv1.MySQL, report string) *batchv1.Job {
	t.Helper()
	finishJob(t, m, backupJobName(m.Name), true, report)
	res, err := scripts.ParseResult(report)
	if err != nil || res.Dump == "" {
		return nil
	}
	v := verifyJobOf(t, m)
	finishJob(t, m, v.Name, true, "verified "+res.Dump)
	return v
}

// verifyJobOf waits for m's verify Job and returns it.
func verifyJobOf(t *testing.T, m *mysqlv1.MySQL) *batchv1.Job {
	t.Helper()
	v := &batchv1.Job{}
	testenv.Eventually(t, "the verify Job", func(ctx context.Context) error {
		return suite.Client.Get(ctx, key(m, verifyJobName(m.Name)), v)
	})
	return v
}

// collect lets m's data volume go as the PVC protection controller would
// once no pod uses it, and deletes the server's pods, as the Deployment's
// deletion would: envtest runs neither controller. The Jobs m owns stay,
// as when the garbage collector is slow to delete them.
func collect(t *testing.T, m *mysqlv1.MySQL) {
	t.Helper()
	if err := suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(m.Namespace), client.MatchingLabels(serverSelector(m)),
		client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := suite.Client.Get(ctx, key(m, dataPVCName(m.Name)), pvc); err == nil && !pvc.DeletionTimestamp.IsZero() {
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Finalizers = nil
		if err := suite.Client.Patch(ctx, pvc, patch); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGone waits until obj is gone: nothing of its name, or another object
// (another UID) made under it since.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	uid := obj.GetUID()
	testenv.Eventually(t, fmt.Sprintf("%T %s to go", obj, obj.GetName()), func(ctx context.Context) error {
		got := obj.DeepCopyObject().(client.Object)
		err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)
		if apierrors.IsNotFound(err) || (err == nil && uid != "" && got.GetUID() != uid) {
			return nil
		}
		return errors.Join(err, errors.New("still there"))
	})
}

// ready brings a new MySQL to Ready: server up, restore done, server
// serving.
func ready(t *testing.T, m *mysqlv1.MySQL, report string) *mysqlv1.MySQL {
	t.Helper()
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	finishJob(t, m, restoreJobName(m.Name), true, report)
	serving(t, m)
	return waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
}

func TestHomeworkLifecycle(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "mysql-instance"))

	// The homework's children, by the homework's names.
	pvc := &corev1.PersistentVolumeClaim{}
	get(t, key(m, "mysql-instance-pvc"), pvc)
	if pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("data PVC: size %v", pvc.Spec.Resources.Requests.Storage())
	}
	// What the backup needs carries no owner reference, which would let the
	// garbage collector delete it first in a foreground deletion.
	for _, obj := range kept(m) {
		get(t, client.ObjectKeyFromObject(obj), obj)
		if len(obj.GetOwnerReferences()) != 0 || obj.GetAnnotations()[uidAnnotation] != string(m.UID) {
			t.Errorf("%T %s: owners %v, annotations %v; want no owner and the MySQL's UID", obj, obj.GetName(), obj.GetOwnerReferences(), obj.GetAnnotations())
		}
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
	if host := envNamed(restore, scripts.EnvHost); host == nil || host.Value != serverIP {
		t.Errorf("the restore Job must reach the server's pod (the Service admits no client yet), has %s=%+v", scripts.EnvHost, host)
	}
	assertNoPassword(t, restore, "otuspassword")
	finishJob(t, m, restore.Name, true, "no-backup free=1073741824")
	serving(t, m)
	got := waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
	waitCondition(t, m, BackupSpace, metav1.ConditionTrue, ReasonSpaceOK)
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
	if e := envNamed(job, scripts.EnvLatestExpected); e == nil || e.Value != "none" {
		t.Errorf("the backup of a server restored from nothing must expect no latest, has %+v", e)
	}
	got = waitCondition(t, m, BackupSucceeded, metav1.ConditionUnknown, ReasonBackingUp)
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready); c.Status != metav1.ConditionFalse || c.Reason != ReasonDeleting {
		t.Errorf("a MySQL being deleted must not say Ready: %+v", c)
	}
	for _, obj := range kept(m) {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil || !obj.GetDeletionTimestamp().IsZero() {
			t.Errorf("%T %s must stay until the backup succeeded: %v, deletion %v", obj, obj.GetName(), err, obj.GetDeletionTimestamp())
		}
	}
	v := finishBackup(t, m, "backed-up otus-database-20261121T120000Z.sql.gz")
	waitGone(t, m)
	// Its work done, the verify Job goes: kubectl get jobs shows the
	// backup Job only, as in the homework.
	waitGone(t, v)
	// The operator deleted them itself (envtest has no garbage collector).
	for _, obj := range kept(m) {
		waitDeleted(t, obj)
	}
	collect(t, m)

	// Recreate: the first MySQL's restore Job, which the garbage collector
	// has not deleted (envtest runs none), is deleted by the operator; the
	// restore loads the backup; a second delete replaces the first MySQL's
	// succeeded backup Job with its own.
	again := create(t, homework(ns, "mysql-instance"))
	waitGone(t, restore)
	got = ready(t, again, "restored otus-database-20261121T120000Z.sql.gz")
	if got.Status.Message != "mysql-instance created with restore-job" || got.Status.RestoredFrom != "otus-database-20261121T120000Z.sql.gz" {
		t.Errorf("message %q, restoredFrom %q", got.Status.Message, got.Status.RestoredFrom)
	}
	// One restore, one Event (lab 5 once showed "Restored (x2)").
	if n := eventsOf(t, got, "Restored"); n != 1 {
		t.Errorf("%d Restored events for one restore, want 1", n)
	}
	if n := eventsOf(t, got, ReasonPreviousJob); n != 1 {
		t.Errorf("%d %s events for the earlier restore Job deleted, want 1", n, ReasonPreviousJob)
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
	j := &batchv1.Job{}
	get(t, key(again, "backup-mysql-instance-job"), j)
	if e := envNamed(j, scripts.EnvLatestExpected); e == nil || e.Value != "otus-database-20261121T120000Z.sql.gz" {
		t.Errorf("the backup must expect latest to name the dump the server was restored from, has %+v", e)
	}
	finishBackup(t, again, "")
	waitGone(t, again)
}

// waitDeleted waits until obj is gone or going (a PVC keeps its protection
// finalizer in envtest, which runs no controller to remove it).
func waitDeleted(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("%T %s to be deleted", obj, obj.GetName()), func(ctx context.Context) error {
		err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) || (err == nil && !obj.GetDeletionTimestamp().IsZero()) {
			return nil
		}
		return errors.Join(err, errors.New("still there"))
	})
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
	// Told once, however many passes see the failed Job.
	if n := eventsOf(t, m, ReasonBackupFailed); n != 1 {
		t.Errorf("%d BackupFailed warning events, want 1", n)
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
	waitSummary(t, m, serves, upToDate, noProblem)
	d := &appsv1.Deployment{}
	get(t, key(m, "rotating"), d)
	if v := d.Spec.Template.Annotations[passwordVersionAnnotation]; v != "1" {
		t.Errorf("the pod template's password version is %q, want 1", v)
	}

	// No status of the new spec says Ready before the pod the change
	// rolls serves: a client that waited for Ready would be cut off.
	w, err := suite.Client.Watch(context.Background(), &mysqlv1.MySQLList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	readyEarly := make(chan string, 1)
	go func() {
		for ev := range w.ResultChan() {
			got, ok := ev.Object.(*mysqlv1.MySQL)
			if !ok || got.Generation < 2 {
				continue
			}
			if r := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready); r != nil &&
				r.Status == metav1.ConditionTrue && r.ObservedGeneration == got.Generation {
				select {
				case readyEarly <- got.ResourceVersion:
				default:
				}
			}
		}
	}()

	setPassword(t, m, "n3w'pass")
	// The server serves on while the Job changes its password, for the
	// spec before: kubectl wait --for=condition=Ready does not pass yet.
	changing := is{metav1.ConditionTrue, ReasonChangingPassword}
	readyFor(t, waitSummary(t, m, serves, changing, noProblem), false)
	j := &batchv1.Job{}
	get(t, key(m, "password-rotating-job"), j)
	assertNoPassword(t, j, "n3w'pass")
	assertNoPassword(t, j, "otuspassword")
	if cur, next := envNamed(j, scripts.EnvPassword), envNamed(j, scripts.EnvNewPassword); cur == nil || next == nil ||
		cur.ValueFrom.SecretKeyRef.Key != keyPassword || next.ValueFrom.SecretKeyRef.Key != keyPendingPassword {
		t.Fatalf("the Job must log in with the confirmed password and set the pending one, got %+v and %+v", cur, next)
	}
	if creds := credentials(t, m); creds[keyPassword] != "otuspassword" || creds[keyPendingPassword] != "n3w'pass" {
		t.Errorf("while the Job runs the credentials must hold both passwords, hold %v", creds)
	}

	// A failure keeps both passwords (the server has one of them) and says so.
	finishJob(t, m, j.Name, false, "")
	waitCondition(t, m, PasswordChanged, metav1.ConditionFalse, ReasonPasswordFailed)
	readyFor(t, waitSummary(t, m, serves, is{metav1.ConditionFalse, ReasonPasswordFailed}, is{metav1.ConditionTrue, ReasonPasswordFailed}), false)
	if creds := credentials(t, m); creds[keyPassword] != "otuspassword" || creds[keyPendingPassword] != "n3w'pass" {
		t.Errorf("after a failed change the credentials hold %v, want both passwords", creds)
	}

	// Deleting the failed Job retries; success moves the Secret on and
	// rolls the server's pod, on a counter that says nothing of the password.
	if err := suite.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitNewJob(t, j)
	waitSummary(t, m, serves, changing, noProblem)
	finishJob(t, m, j.Name, true, "password-changed")
	waitCondition(t, m, PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged)
	creds := credentials(t, m)
	if creds[keyPassword] != "n3w'pass" || creds[keyPendingPassword] != "" {
		t.Errorf("credentials after the change: %v", creds)
	}
	testenv.Eventually(t, "the server's pod template to roll", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, key(m, "rotating"), d); err != nil {
			return err
		}
		if v := d.Spec.Template.Annotations[passwordVersionAnnotation]; v != "2" {
			return fmt.Errorf("password version %q, want 2", v)
		}
		return nil
	})
	waitDeleted(t, j)
	select {
	case rv := <-readyEarly:
		t.Fatalf("the MySQL (resourceVersion %s) said Ready for the new password before its pod rolled", rv)
	case <-time.After(time.Second):
	}
	deploymentAvailable(t, d)
	// Once the change is done, Progressing goes back to False.
	got := waitSummary(t, m, serves, upToDate, noProblem)
	readyFor(t, got, true)
	// kubectl wait --for=condition=PasswordChanged passes on the new spec
	// (it compares the condition's observedGeneration too).
	if c := meta.FindStatusCondition(got.Status.Conditions, PasswordChanged); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
		t.Errorf("PasswordChanged %+v, generation %d: want True for the current spec", c, got.Generation)
	}
	if strings.Contains(fmt.Sprintf("%+v", got.Status), "n3w'pass") {
		t.Error("the status shows the password")
	}

	// PasswordChanged is computed from what is observed (the Secret
	// counts the changes), not only when a Job is confirmed: had the
	// confirming pass's status write been lost (a conflict drops it, and
	// the Job is gone after), a later pass says it again.
	forgeCondition(t, m, metav1.Condition{Type: PasswordChanged, Status: metav1.ConditionUnknown,
		Reason: ReasonChangingPassword, Message: "as a pass left it before its confirmation was written"})
	waitCondition(t, m, PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged)
}

// readyFor checks whether Ready describes m's spec, which is what `kubectl
// wait --for=condition=Ready` asks of its observedGeneration.
func readyFor(t *testing.T, m *mysqlv1.MySQL, current bool) {
	t.Helper()
	r := meta.FindStatusCondition(m.Status.Conditions, conditions.Ready)
	if r == nil || (r.ObservedGeneration == m.Generation) != current || (m.Status.ObservedGeneration == m.Generation) != current {
		t.Errorf("Ready %+v, observedGeneration %d, generation %d: want Ready for the current spec %v",
			r, m.Status.ObservedGeneration, m.Generation, current)
	}
}

// A user who changes the password back while the Job that sets the new one
// runs: the Job is not interrupted, its success is recorded, then the old
// password is set again. At every step the credentials hold the password
// the server has.
func TestPasswordRevertedDuringTheChange(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "fickle"))
	ready(t, m, "no-backup")
	setPassword(t, m, "p1")
	first := &batchv1.Job{}
	get(t, key(m, "password-fickle-job"), first)
	setPassword(t, m, "otuspassword")
	// The running Job stays, and the credentials too.
	waitCondition(t, m, PasswordChanged, metav1.ConditionUnknown, ReasonChangingPassword)
	assertSameJob(t, first)
	if creds := credentials(t, m); creds[keyPassword] != "otuspassword" || creds[keyPendingPassword] != "p1" {
		t.Errorf("credentials %v, want both passwords while the Job runs", creds)
	}
	finishJob(t, m, first.Name, true, "password-changed") // the server has p1
	testenv.Eventually(t, "p1 recorded, then the change back started", func(ctx context.Context) error {
		j := &batchv1.Job{}
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(first), j); err != nil {
			return err
		}
		if j.UID == first.UID {
			return errors.New("still the first Job")
		}
		return nil
	})
	if creds := credentials(t, m); creds[keyPassword] != "p1" || creds[keyPendingPassword] != "otuspassword" {
		t.Errorf("credentials %v: the server has p1, and otuspassword is being set", creds)
	}
	finishJob(t, m, first.Name, true, "password-changed")
	testenv.Eventually(t, "the credentials back on the first password", func(ctx context.Context) error {
		if creds := credentials(t, m); creds[keyPassword] != "otuspassword" || creds[keyPendingPassword] != "" {
			return fmt.Errorf("credentials %v", creds)
		}
		return nil
	})
}

// waitNewJob waits until a Job named like j is another Job.
func waitNewJob(t *testing.T, j *batchv1.Job) {
	t.Helper()
	testenv.Eventually(t, "a new "+j.Name, func(ctx context.Context) error {
		n := &batchv1.Job{}
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(j), n); err != nil {
			return err
		}
		if n.UID == j.UID {
			return errors.New("still the old Job")
		}
		return nil
	})
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
	missing := is{metav1.ConditionFalse, ReasonSecretNotFound}
	waitSummary(t, m, missing, missing, is{metav1.ConditionTrue, ReasonSecretNotFound})
	if err := suite.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns},
		StringData: map[string]string{"pw": "from-a-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	// Degraded clears as soon as the Secret exists: the server starts.
	starting := is{metav1.ConditionFalse, ReasonServerStarting}
	waitSummary(t, m, starting, is{metav1.ConditionTrue, ReasonServerStarting}, noProblem)
	ready(t, m, "no-backup")
	waitSummary(t, m, serves, upToDate, noProblem)
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
		{"a size of nothing", func(s map[string]any) { s["storage_size"] = "0" }, "storage_size must be a positive size"},
		{"a database the dump tools would take for an option", func(s map[string]any) { s["database"] = "--all-databases" }, "must not start with -"},
		{"a database starting with -", func(s map[string]any) { s["database"] = "-x" }, "must not start with -"},
		{"a database with a space", func(s map[string]any) { s["database"] = "a b" }, "spec.database"},
		{"no backup kept", func(s map[string]any) { s["backupsToKeep"] = 0 }, "spec.backupsToKeep"},
		{"MySQL's own database", func(s map[string]any) { s["database"] = "mysql" }, "must not be one of MySQL's own"},
		{"MySQL's own database, upper-case", func(s map[string]any) { s["database"] = "Performance_Schema" }, "must not be one of MySQL's own"},
		{"a password the entrypoint would take for an option", func(s map[string]any) { s["password"] = "-secret" }, "password must not start with -"},
		{"a Secret in another namespace", func(s map[string]any) {
			delete(s, "password")
			s["passwordSecretRef"] = map[string]any{"name": "kube-system/admin"}
		}, "not namespace/name"},
		{"a Secret key no Secret can have", func(s map[string]any) {
			delete(s, "password")
			s["passwordSecretRef"] = map[string]any{"name": "s", "key": "a/b"}
		}, "spec.passwordSecretRef.key"},
		{"thousandths of a byte", func(s map[string]any) { s["storage_size"] = "1500m" }, "whole number of bytes"},
	}
	names := []struct{ name, message string }{
		{"with.a.dot", "must be a DNS label"},
		{"Upper", "must be a DNS label"},
		{"1starts-with-a-digit", "must be a DNS label"},
		{strings.Repeat("n", 51), "at most 50 characters"},
	}
	for _, n := range names {
		t.Run("the name "+n.name, func(t *testing.T) {
			obj := cr(full())
			obj.SetName(n.name)
			err := suite.Client.Create(ctx, obj, client.FieldValidation("Strict"))
			if err == nil || !strings.Contains(err.Error(), n.message) {
				t.Fatalf("want an error containing %q, got %v", n.message, err)
			}
		})
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

	// What no volume can follow is refused as an edit: the operator could
	// never carry it out.
	spec := full()
	spec["storageClassName"] = "standard"
	obj := cr(spec)
	obj.SetName("kept-as-made")
	if err := suite.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	// Merge patches, as kubectl edit sends: the operator writes the
	// MySQL meanwhile (its finalizer, its status).
	edit := func(spec string) error {
		return suite.Client.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":`+spec+`}`)))
	}
	edits := []struct {
		name, spec, message string
	}{
		{"another class", `{"storageClassName":"fast"}`, "storageClassName cannot change"},
		{"no class", `{"storageClassName":null}`, "storageClassName cannot change"},
		{"a smaller size", `{"storage_size":"512Mi"}`, "storage_size cannot shrink"},
	}
	for _, tt := range edits {
		t.Run("an edit to "+tt.name, func(t *testing.T) {
			if err := edit(tt.spec); err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an error containing %q, got %v", tt.message, err)
			}
		})
	}
	if err := edit(`{"storage_size":"2Gi"}`); err != nil {
		t.Errorf("a bigger size is refused: %v", err)
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
	serving(t, m)
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
	verify := verifyJobOf(t, m)
	suite.Restart(t)
	finishJob(t, m, verify.Name, true, "verified otus-database-20261121T130500Z.sql.gz")
	waitGone(t, m)
	assertSameJob(t, backup)
}

// eventsOf counts the Events of reason about obj, a repeated Event as many
// times as it happened.
func eventsOf(t *testing.T, obj client.Object, reason string) int {
	t.Helper()
	n, err := testenv.CountEvents(ctx, suite.Client, obj, reason)
	if err != nil {
		t.Fatal(err)
	}
	return n
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

// An object the operator did not create is never taken over: the MySQL says
// NameConflict and touches nothing until the object goes.
func TestNeverAdoptsAStranger(t *testing.T) {
	strangers := []client.Object{
		&corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
		&corev1.Secret{StringData: map[string]string{"password": "someone else's"}},
		&appsv1.Deployment{Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "other"}}},
			},
		}},
	}
	for _, stranger := range strangers {
		t.Run(apply.KindOf(stranger), func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := homework(ns, "taken")
			for _, obj := range kept(m) {
				if apply.KindOf(obj) == apply.KindOf(stranger) {
					stranger.SetName(obj.GetName())
				}
			}
			stranger.SetNamespace(ns)
			if err := suite.Client.Create(ctx, stranger); err != nil {
				t.Fatal(err)
			}
			before := stranger.DeepCopyObject().(client.Object)
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(stranger), before); err != nil {
				t.Fatal(err)
			}
			create(t, m)
			got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonNameConflict)
			if msg := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded).Message; !strings.Contains(msg, stranger.GetName()) {
				t.Errorf("the condition does not name the object: %q", msg)
			}
			testenv.Eventually(t, "a NameConflict warning event", func(ctx context.Context) error {
				var events eventsv1.EventList
				if err := suite.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
					return err
				}
				for _, e := range events.Items {
					if e.Reason == ReasonNameConflict && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, stranger.GetName()) {
						return nil
					}
				}
				return fmt.Errorf("%d events, none a NameConflict warning", len(events.Items))
			})
			after := stranger.DeepCopyObject().(client.Object)
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(stranger), after); err != nil {
				t.Fatal(err)
			}
			if after.GetResourceVersion() != before.GetResourceVersion() || len(after.GetOwnerReferences()) != 0 {
				t.Errorf("the stranger's %s was changed: owners %v", apply.KindOf(stranger), after.GetOwnerReferences())
			}
			// Gone, it no longer stands in the way.
			if err := suite.Client.Delete(ctx, after, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
			if _, ok := stranger.(*corev1.PersistentVolumeClaim); !ok {
				waitCondition(t, m, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonNoProblem)
			}
		})
	}
}

// A Job in the way of the restore that no earlier MySQL of the name made
// is someone else's: the restore waits for it to go, and it is left as it
// is, whether it carries the operator's labels (the cache holds it) or not
// (only the API server does).
func TestStrangersJobIsNeverDeleted(t *testing.T) {
	for name, set := range map[string]map[string]string{
		"unlabelled": nil,
		"labelled":   {mysqlLabel: "taken", labels.ManagedBy: FieldOwner},
	} {
		t.Run(name, func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := homework(ns, "taken")
			stranger := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: restoreJobName(m.Name), Namespace: ns, Labels: set},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "other"}},
				}}},
			}
			if err := suite.Client.Create(ctx, stranger); err != nil {
				t.Fatal(err)
			}
			create(t, m)
			serverUp(t, m)
			got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonNameConflict)
			if c := meta.FindStatusCondition(got.Status.Conditions, Restored); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != ReasonNameConflict {
				t.Errorf("Restored must say what is in the way: %+v", c)
			}
			assertSameJob(t, stranger)
		})
	}
}

// The Service, and the Deployment, select the server's pods only: never a
// Job's, and the server's only once its restore is done.
func TestSelectorsMatchTheServerOnly(t *testing.T) {
	m := homework("ns", "sel")
	m.UID = "uid-1"
	matches := func(selector, labels map[string]string) bool {
		for k, v := range selector {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	jobs := []*batchv1.Job{
		restoreJob(m, testJobs, testServer, "volume-uid"),
		backupJob(m, testJobs, backupPlan{host: serverIP}),
		passwordJob(m, testJobs, serverIP, keyPendingPassword, "1"),
	}
	svc := service(m).Spec.Selector
	dep := deployment(m, false, "1", DefaultServerRequests)
	for _, j := range jobs {
		pod := j.Spec.Template.Labels
		if matches(svc, pod) || matches(dep.Spec.Selector.MatchLabels, pod) {
			t.Errorf("the pods of %s (labels %v) are selected by the Service (%v) or the Deployment (%v)", j.Name, pod, svc, dep.Spec.Selector.MatchLabels)
		}
	}
	if !matches(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) {
		t.Error("the Deployment does not select its own pods")
	}
	if matches(svc, dep.Spec.Template.Labels) {
		t.Error("the Service selects the server before its restore is done")
	}
	restored := maps.Clone(dep.Spec.Template.Labels)
	restored[servingLabel] = "true" // markServing's label
	if !matches(svc, restored) {
		t.Error("the Service does not select the server once its restore is done")
	}
	if legacy := deployment(m, true, "1", DefaultServerRequests); !matches(svc, legacy.Spec.Template.Labels) {
		t.Error("the Service does not select the pods of a template 0.2.0 labelled")
	}
	if dep.Spec.Template.Labels["app"] != m.Name {
		t.Errorf("kubectl get pods -l app=%s must find the server", m.Name)
	}
}

// A server whose restore never finished may hold rows written through
// kubectl exec, but no data restored: its backup becomes latest only if
// there is no latest, never replacing the last good one. The backup script
// decides from the backup volume, not from anything the status says.
func TestBackupOfAnUnrestoredServerExpectsNoLatest(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "unrestored"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	finishJob(t, m, restoreJobName(m.Name), false, "failed: cannot read the dump")
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonRestoreFailed)
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{}
	get(t, key(m, backupJobName(m.Name)), j)
	if e := envNamed(j, scripts.EnvLatestExpected); e == nil || e.Value != "none" {
		t.Errorf("the backup of an unrestored server must expect no latest (%s=none), has %+v", scripts.EnvLatestExpected, e)
	}
	if e := envNamed(j, scripts.EnvHost); e == nil || e.Value != serverIP {
		t.Errorf("the backup must reach the unrestored server at its pod, has %+v", e)
	}
	finishBackup(t, m, "backed-up-aside otus-database-20261122T090000Z.sql.gz")
	waitGone(t, m)
}

// Jobs whose pods leave no report (kwok's fake nodes run no script) succeed
// without the status claiming what they did: the restore is not "Restored"
// from anything, and since what the server holds is not known, its backup
// becomes the latest only where there is none.
func TestUnreportedJobsClaimNothing(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "unreported"))
	ready(t, m, "")
	got := waitCondition(t, m, Restored, metav1.ConditionTrue, ReasonRestoreUnreported)
	if got.Status.RestoredFrom != "" || got.Status.Message != "unreported created with restore-job, which did not report what it loaded" {
		t.Errorf("restoredFrom %q, message %q", got.Status.RestoredFrom, got.Status.Message)
	}

	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{}
	get(t, key(m, backupJobName(m.Name)), j)
	if e := envNamed(j, scripts.EnvLatestExpected); e == nil || e.Value != "none" {
		t.Errorf("the backup of a server restored from an unknown dump must expect no latest (%s=none), has %+v", scripts.EnvLatestExpected, e)
	}
	if e := envNamed(j, scripts.EnvHost); e == nil || e.Value != serverIP {
		t.Errorf("the backup reaches the server at its pod, never through the Service, has %+v", e)
	}
	finishBackup(t, m, "")
	waitGone(t, m)
	if err := suite.Client.Get(ctx, key(m, verifyJobName(m.Name)), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("a verify Job for a backup that named no dump: %v", err)
	}
	// The MySQL is gone with its status; its Event says what was known.
	if n := eventsOf(t, m, ReasonBackupUnreported); n != 1 {
		t.Errorf("%d %s events, want 1", n, ReasonBackupUnreported)
	}
}

// Neither the server nor a Job talks to the API server: their pods get no
// ServiceAccount token.
func TestPodsMountNoServiceAccountToken(t *testing.T) {
	m := homework("ns", "tokenless")
	if a := deployment(m, true, "1", DefaultServerRequests).Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the server's pods mount a ServiceAccount token")
	}
	for _, j := range []*batchv1.Job{
		restoreJob(m, testJobs, testServer, "volume-uid"),
		backupJob(m, testJobs, backupPlan{host: serverIP}),
		passwordJob(m, testJobs, serverIP, keyPendingPassword, "1"),
	} {
		if a := j.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("the pods of %s mount a ServiceAccount token", j.Name)
		}
	}
}

// The server and every Job request CPU and memory, the operator's (which
// its flags set).
func TestPodsRequestCPUAndMemory(t *testing.T) {
	m := homework("ns", "requests")
	server := deployment(m, true, "1", DefaultServerRequests).Spec.Template.Spec.Containers[0].Resources
	if server == nil || !server.Requests.Cpu().Equal(DefaultServerRequests.CPU) || !server.Requests.Memory().Equal(DefaultServerRequests.Memory) {
		t.Errorf("the server requests %+v, want %v", server, DefaultServerRequests.List())
	}
	for _, j := range []*batchv1.Job{
		restoreJob(m, testJobs, testServer, "volume-uid"),
		backupJob(m, testJobs, backupPlan{host: serverIP}),
		passwordJob(m, testJobs, serverIP, keyPendingPassword, "1"),
	} {
		r := j.Spec.Template.Spec.Containers[0].Resources.Requests
		if !r.Cpu().Equal(DefaultJobRequests.CPU) || !r.Memory().Equal(DefaultJobRequests.Memory) {
			t.Errorf("the pods of %s request %v, want %v", j.Name, r, DefaultJobRequests.List())
		}
	}
}

// A server the kubelet cannot run makes the MySQL Degraded with the kubelet's
// reason, with one Warning event, instead of waiting for it forever; once it
// runs, the restore goes on and the MySQL is Ready.
func TestStuckServerIsDegraded(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "stuck"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	_, pod := serverPod(t, m)
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mysql", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "mysql:5.7"`},
	}}}
	if err := suite.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, "ImagePullBackOff")
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); !strings.Contains(c.Message, "the server cannot run: container mysql of pod "+pod.Name) {
		t.Errorf("Degraded says %q", c.Message)
	}
	for _, typ := range []string{conditions.Ready, conditions.Progressing} {
		if c := meta.FindStatusCondition(got.Status.Conditions, typ); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ImagePullBackOff" {
			t.Errorf("%s: %+v, want False for ImagePullBackOff", typ, c)
		}
	}
	testenv.Eventually(t, "one ImagePullBackOff warning", func(ctx context.Context) error {
		if n, err := testenv.CountEvents(ctx, suite.Client, m, "ImagePullBackOff"); err != nil || n != 1 {
			return fmt.Errorf("%d ImagePullBackOff events (%w)", n, err)
		}
		return nil
	})
	// The image is pulled at last: the server answers, the restore runs.
	if err := suite.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	ready(t, m, "no-backup free=1073741824")
	waitCondition(t, m, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonNoProblem)
	if n := eventsOf(t, m, "ImagePullBackOff"); n != 1 {
		t.Errorf("%d ImagePullBackOff events, want 1", n)
	}
}

// Recreate deletes the running server before it creates the new pod: a
// template whose pod the API server refuses is never given to the
// Deployment.
func TestRefusedServerPodLeavesTheServerRunning(t *testing.T) {
	ns := suite.RefusingNamespace(t, "mysql:refused")
	m := create(t, homework(ns, "kept"))
	ready(t, m, "no-backup free=1073741824")
	setImage := func(image string) {
		t.Helper()
		patch := client.MergeFrom(m.DeepCopy())
		m.Spec.Image = image
		if err := suite.Client.Patch(ctx, m, patch); err != nil {
			t.Fatal(err)
		}
	}
	image := func(ctx context.Context) (string, error) {
		d := &appsv1.Deployment{}
		if err := suite.Client.Get(ctx, key(m, m.Name), d); err != nil {
			return "", err
		}
		return d.Spec.Template.Spec.Containers[0].Image, nil
	}

	setImage("mysql:refused")
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonRefused)
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); !strings.Contains(c.Message, "the image mysql:refused is not allowed here") {
		t.Errorf("Degraded says %q, not the policy's message", c.Message)
	}
	if got.Status.ObservedGeneration >= got.Generation {
		t.Errorf("observedGeneration %d for generation %d, whose server pod was refused", got.Status.ObservedGeneration, got.Generation)
	}
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, conditions.ReasonRefused)
	if img, err := image(ctx); err != nil || img != "mysql:5.7" {
		t.Fatalf("the Deployment runs %q (%v): a template the API server refuses replaced the running server's", img, err)
	}

	setImage("mysql:8.0")
	testenv.Eventually(t, "the Deployment runs mysql:8.0", func(ctx context.Context) error {
		if img, err := image(ctx); err != nil || img != "mysql:8.0" {
			return fmt.Errorf("it runs %q (%w)", img, err)
		}
		return nil
	})
}

// A first Deployment has no server to keep: its template is not asked for
// by a dry run, and a server pod the cluster refuses is told from the
// Deployment's ReplicaFailure condition, with the API server's message.
// envtest runs no kube-controller-manager: the test sets the condition as
// its ReplicaSet and Deployment controllers do, with the refusal the API
// server gives a pod of the Deployment's template (tests/e2e has the real
// controllers).
func TestRefusedFirstServerPodIsTold(t *testing.T) {
	ns := suite.RefusingNamespace(t, "mysql:refused")
	m := homework(ns, "refused")
	m.Spec.Image = "mysql:refused"
	create(t, m)
	d := &appsv1.Deployment{}
	get(t, key(m, m.Name), d)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: ns, Labels: d.Spec.Template.Labels},
		Spec:       d.Spec.Template.Spec,
	}
	refusal := suite.Client.Create(ctx, pod, client.DryRunAll)
	if refusal == nil {
		t.Fatal("the policy admits a pod of the server's template")
	}
	setFailure := func(failed bool) {
		t.Helper()
		d.Status.ObservedGeneration = d.Generation
		d.Status.Conditions = nil
		if failed {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure,
				Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: refusal.Error()}}
		}
		if err := suite.Client.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	setFailure(true)
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonRefused)
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); !strings.Contains(c.Message, "the image mysql:refused is not allowed here") {
		t.Errorf("Degraded says %q, not the policy's message", c.Message)
	}
	// Its spec was carried out (the Deployment is made): the generation
	// is observed, as for a pod the kubelet cannot run, and Ready is not
	// (Reported).
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, conditions.ReasonRefused)

	// The cause gone (a person's fix of the policy), the ReplicaSet
	// creates the pod and the condition goes: so does Degraded.
	get(t, key(m, m.Name), d)
	setFailure(false)
	waitCondition(t, m, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonNoProblem)
}

// BackupSpace, and the Degraded it brings, is said on every pass from what
// the restore Job measured, kept on the data volume: not from the MySQL's
// status, which a person may write, and not only on the pass that read the
// Job, which is gone once the restore is done.
func TestBackupSpaceIsSaidFromTheDataVolume(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "cramped"))
	// Room for less than two more dumps of the last one's size.
	ready(t, m, "restored otus-database-20261121T120000Z.sql.gz free=1500000 size=1000000")
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonSpaceLow)
	// The restore Job goes (a person deletes it, or it goes with a backup
	// volume being deleted): what it measured stays with the volume.
	restore := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: restoreJobName(m.Name)}}
	if err := suite.Client.Delete(ctx, restore, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitDeleted(t, restore)
	pvc := &corev1.PersistentVolumeClaim{}
	get(t, key(m, dataPVCName(m.Name)), pvc)
	if got := pvc.Annotations[spaceAnnotation]; got != "1500000/1000000" {
		t.Errorf("the data volume's %s is %q, want what the restore Job measured", spaceAnnotation, got)
	}
	// A status that says there is room changes nothing.
	forgeCondition(t, m, metav1.Condition{Type: BackupSpace, Status: metav1.ConditionTrue,
		Reason: ReasonSpaceOK, Message: "plenty, says the status"})
	waitCondition(t, m, BackupSpace, metav1.ConditionFalse, ReasonSpaceLow)
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonSpaceLow)
}

// forgeCondition writes c into m's status, as a person allowed to write the
// status could, or as a pass whose write was lost would have left it.
func forgeCondition(t *testing.T, m *mysqlv1.MySQL, c metav1.Condition) {
	t.Helper()
	testenv.Eventually(t, "a status with "+c.Type+" "+string(c.Status), func(ctx context.Context) error {
		forged := &mysqlv1.MySQL{}
		if err := suite.Client.Get(ctx, key(m, m.Name), forged); err != nil {
			return err
		}
		meta.SetStatusCondition(&forged.Status.Conditions, c)
		return suite.Client.Status().Update(ctx, forged)
	})
}
