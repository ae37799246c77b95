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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// What a careless or hostile user of the namespace can do, and what the
// operator must do then: no name, label or status anyone can write sends a
// dump to the wrong place or lets an empty database pass for the data.

// backupJobOf waits for m's backup Job and returns it.
func backupJobOf(t *testing.T, m *mysqlv1.MySQL) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	get(t, key(m, backupJobName(m.Name)), j)
	return j
}

// wantEnv fails t unless j's container has name=want ("<unset>" for none).
func wantEnv(t *testing.T, j *batchv1.Job, name, want, why string) {
	t.Helper()
	got := "<unset>"
	if e := envNamed(j, name); e != nil {
		got = e.Value
	}
	if got != want {
		t.Errorf("%s: %s=%s, want %s", why, name, got, want)
	}
}

// deleteInUse deletes pvc as if a pod used it: a finalizer holds it, as the
// PVC protection controller's would, until release.
func deleteInUse(t *testing.T, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Finalizers = append(pvc.Finalizers, "test/in-use")
	if err := suite.Client.Patch(ctx, pvc, patch); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

// release lets a claim deleteInUse deleted go.
func release(t *testing.T, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	get(t, client.ObjectKeyFromObject(pvc), pvc)
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Finalizers = nil
	if err := suite.Client.Patch(ctx, pvc, patch); err != nil {
		t.Fatal(err)
	}
}

// The homework at a learner's pace: rows written through kubectl exec as
// soon as the server's pod runs, and the MySQL deleted at once, before its
// first restore (from an empty backup volume) is reported or even done. The
// backup must be able to become the latest: it expects no latest, and the
// backup volume has none. (Before: MAKE_LATEST=no, the dump kept aside and
// the next MySQL said "there was no backup to restore".)
func TestLearnersPaceBackupCanBecomeLatest(t *testing.T) {
	for _, restore := range []string{"running", "done, not yet reported"} {
		t.Run("restore "+restore, func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := create(t, homework(ns, "mysql-instance"))
			waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
			serverUp(t, m)
			get(t, key(m, restoreJobName(m.Name)), &batchv1.Job{})
			if restore != "running" {
				finishJob(t, m, restoreJobName(m.Name), true, "no-backup free=1073741824")
			}
			if err := suite.Client.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
			j := backupJobOf(t, m)
			wantEnv(t, j, scripts.EnvLatestExpected, "none", "a server that restored nothing, or not yet")
			wantEnv(t, j, scripts.EnvHost, serverIP, "the server's pod")
			finishBackup(t, m, "backed-up otus-database-20261125T100000Z.sql.gz")
			waitGone(t, m)
		})
	}
}

// A status anyone with the right to write it may change decides nothing: a
// forged Restored=True skips no restore, and a forged restoredFrom does not
// change what the backup expects latest to name.
func TestForgedStatusDecidesNothing(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "forged"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	forge := func(from string) {
		t.Helper()
		got := &mysqlv1.MySQL{}
		get(t, key(m, m.Name), got)
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: Restored, Status: metav1.ConditionTrue,
			Reason: ReasonRestored, Message: "forged"})
		got.Status.RestoredFrom = from
		if err := suite.Client.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	forge("forged.sql.gz")
	serverUp(t, m)
	// The restore runs all the same, and the server serves no client first.
	get(t, key(m, restoreJobName(m.Name)), &batchv1.Job{})
	// Nor does a pod labelled serving by hand: the label comes off.
	for _, p := range serverPodsOf(t, m) {
		patch := client.MergeFrom(p.DeepCopy())
		p.Labels[servingLabel] = "true"
		if err := suite.Client.Patch(ctx, &p, patch); err != nil {
			t.Fatal(err)
		}
	}
	notServing(t, m, "the server serves clients before its restore")
	finishJob(t, m, restoreJobName(m.Name), true, "restored otus-database-20261125T090000Z.sql.gz")
	serving(t, m)
	waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
	pvc := &corev1.PersistentVolumeClaim{}
	get(t, key(m, dataPVCName(m.Name)), pvc)
	if got := pvc.Annotations[restoredAnnotation]; got != "otus-database-20261125T090000Z.sql.gz" {
		t.Errorf("the data volume says it was restored from %q", got)
	}

	forge("forged.sql.gz")
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	j := backupJobOf(t, m)
	wantEnv(t, j, scripts.EnvLatestExpected, "otus-database-20261125T090000Z.sql.gz", "the dump the volume was restored from, whatever the status says")
	finishBackup(t, m, "backed-up otus-database-20261125T100000Z.sql.gz")
	waitGone(t, m)
}

// Dumps go to, and come from, the pod the operator's Deployment runs: a pod
// that wears the server's labels (and answers first) is never addressed.
func TestJobsAddressTheServerTheOperatorRuns(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "addressed"))
	d := &appsv1.Deployment{}
	get(t, key(m, m.Name), d)
	impostor := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "impostor", Namespace: ns, Labels: d.Spec.Template.Labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "mysql:5.7"}}},
	}
	if err := suite.Client.Create(ctx, impostor); err != nil {
		t.Fatal(err)
	}
	impostor.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.66",
		Conditions: []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}}
	if err := suite.Client.Status().Update(ctx, impostor); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, m, Restored, metav1.ConditionUnknown, ReasonServerStarting)
	if err := suite.Client.Get(ctx, key(m, restoreJobName(m.Name)), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a restore Job was started for the impostor: %v", err)
	}
	serverUp(t, m)
	j := &batchv1.Job{}
	get(t, key(m, restoreJobName(m.Name)), j)
	wantEnv(t, j, scripts.EnvHost, serverIP, "the restore's server")
	finishJob(t, m, j.Name, false, "failed: cut off")
	waitCondition(t, m, Restored, metav1.ConditionFalse, ReasonRestoreFailed)
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	wantEnv(t, backupJobOf(t, m), scripts.EnvHost, serverIP, "the backup's server")
}

// A restore Job whose server pod was replaced while it ran (it would wait
// in vain for the old address, or lost it mid-stream) is run again against
// the new pod, not left to fail.
func TestRestoreFollowsAReplacedServerPod(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "replaced"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	first := &batchv1.Job{}
	get(t, key(m, restoreJobName(m.Name)), first)
	var pods corev1.PodList
	if err := suite.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(serverSelector(m))); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if err := suite.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	serverUp(t, m)
	waitNewJob(t, first)
	again := &batchv1.Job{}
	get(t, key(m, restoreJobName(m.Name)), again)
	if err := suite.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(serverSelector(m))); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || again.Annotations[serverPodAnnotation] != string(pods.Items[0].UID) {
		t.Errorf("the new restore Job loads into pod %s, want the new server pod", again.Annotations[serverPodAnnotation])
	}
	if again.Annotations[dataVolumeAnnotation] != first.Annotations[dataVolumeAnnotation] {
		t.Error("the restore of the same volume changed its RESTORE_ID")
	}
	finishJob(t, m, again.Name, true, "no-backup")
	serving(t, m)
	waitCondition(t, m, conditions.Ready, metav1.ConditionTrue, ReasonReady)
}

// The restore starts once the server's pod runs, not once it is ready: a
// server whose data directory refuses root from other hosts (its first
// initialisation was killed) never passes its readiness probe, and only the
// restore, refused in the server's words, says why. It follows a server
// pod replaced by one that runs, ready or not, too.
func TestRestoreStartsOnARunningServerNotReady(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "unready"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	_, first := serverRuns(t, m, false)
	j := &batchv1.Job{}
	get(t, key(m, restoreJobName(m.Name)), j)
	wantEnv(t, j, scripts.EnvHost, serverIP, "the restore's server")
	if j.Annotations[serverPodAnnotation] != string(first.UID) {
		t.Errorf("the restore Job loads into pod %s, want %s", j.Annotations[serverPodAnnotation], first.UID)
	}
	if err := suite.Client.Delete(ctx, first, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	_, second := serverRuns(t, m, false)
	waitNewJob(t, j)
	again := &batchv1.Job{}
	get(t, key(m, restoreJobName(m.Name)), again)
	if again.Annotations[serverPodAnnotation] != string(second.UID) {
		t.Errorf("the new restore Job loads into pod %s, want the new server pod %s", again.Annotations[serverPodAnnotation], second.UID)
	}
	finishJob(t, m, again.Name, false, "failed: the MySQL server at 10.0.0.7:3306 refuses connections from this pod's address: ERROR 1130")
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonRestoreFailed)

	// A restore that failed on a server the kubelet cannot run failed
	// because of it: Degraded gives the kubelet's reason.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			return err
		}
		second.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mysql", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container"},
		}}}
		return suite.Client.Status().Update(ctx, second)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, "CrashLoopBackOff")
	if c := meta.FindStatusCondition(got.Status.Conditions, Restored); c == nil || c.Reason != ReasonRestoreFailed {
		t.Errorf("Restored is %+v, want its RestoreFailed", c)
	}
}

// A data volume deleted under a running server says so while it goes, and
// the new volume is restored from the latest backup: the server never
// serves an empty database as if it held the data.
func TestReplacedDataVolumeIsRestoredAgain(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "volatile"))
	ready(t, m, "restored otus-database-20261125T090000Z.sql.gz")
	old := &corev1.PersistentVolumeClaim{}
	get(t, key(m, dataPVCName(m.Name)), old)
	oldJob := &batchv1.Job{}
	get(t, key(m, restoreJobName(m.Name)), oldJob)

	server := serverPodsOf(t, m)[0]
	schedule(t, &server)
	deleteInUse(t, old)
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonDataVolumeDeleted)
	// The spec as it is stays carried out: the server serves on.
	readyFor(t, waitSummary(t, m, serves, upToDate, is{metav1.ConditionTrue, ReasonDataVolumeDeleted}), true)
	if p := (&corev1.Pod{}); suite.Client.Get(ctx, client.ObjectKeyFromObject(&server), p) != nil || !p.DeletionTimestamp.IsZero() {
		t.Errorf("the pod of a server restored was deleted with its data volume: the data went before a backup")
	}
	// Nothing replaces the server's pod meanwhile, which would take the
	// data with it: a new image waits.
	d := &appsv1.Deployment{}
	get(t, key(m, m.Name), d)
	image := d.Spec.Template.Spec.Containers[0].Image
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"image":"mysql:8.0"}}`))
	if err := suite.Client.Patch(ctx, &mysqlv1.MySQL{ObjectMeta: m.ObjectMeta}, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "Degraded about the new spec", func(ctx context.Context) error {
		got := &mysqlv1.MySQL{}
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded)
		if c == nil || c.Reason != ReasonDataVolumeDeleted || c.ObservedGeneration != got.Generation ||
			!strings.Contains(c.Message, "no change to the server is applied") {
			return fmt.Errorf("Degraded %+v, generation %d", c, got.Generation)
		}
		return nil
	})
	get(t, key(m, m.Name), d)
	if now := d.Spec.Template.Spec.Containers[0].Image; now != image {
		t.Errorf("the server's template went to %s while its data volume was being deleted", now)
	}
	// The new image is not carried out: kubectl wait does not pass on it.
	got := &mysqlv1.MySQL{}
	get(t, key(m, m.Name), got)
	readyFor(t, got, false)
	// The pod stopped: the volume goes.
	release(t, old)
	if pvc := replaced(t, m, old); pvc.Annotations[restoredAnnotation] != "" {
		t.Errorf("the new volume says it was restored from %q", pvc.Annotations[restoredAnnotation])
	}
	waitCondition(t, m, Restored, metav1.ConditionUnknown, ReasonRestoring)
	testenv.Eventually(t, "one DataVolumeReplaced warning", func(ctx context.Context) error {
		if n, err := testenv.CountEvents(ctx, suite.Client, m, ReasonDataVolumeReplaced); err != nil || n != 1 {
			return fmt.Errorf("%d events (%w)", n, err)
		}
		return nil
	})
	waitNewJob(t, oldJob)
	notServing(t, m, "the server on the new volume serves clients before its restore")
	finishJob(t, m, oldJob.Name, true, "restored otus-database-20261125T090000Z.sql.gz")
	serving(t, m)
	readyFor(t, waitSummary(t, m, serves, upToDate, noProblem), true)
	get(t, key(m, m.Name), d)
	if now := d.Spec.Template.Spec.Containers[0].Image; now != "mysql:8.0" {
		t.Errorf("the server on the new volume runs %s, not the spec's image", now)
	}
}

// schedule binds pod to a node, as the scheduler would: a pod scheduled
// with a claim holds it until it ends.
func schedule(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := suite.Client.SubResource("binding").Create(ctx, pod, b); err != nil {
		t.Fatal(err)
	}
}

// replaced waits for m's data volume to be a new one, not old, and returns it.
func replaced(t *testing.T, m *mysqlv1.MySQL, old *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	testenv.Eventually(t, "a new data volume", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, key(m, dataPVCName(m.Name)), pvc); err != nil {
			return err
		}
		if pvc.UID == old.UID {
			return errors.New("still the old volume")
		}
		return nil
	})
	return pvc
}

// A server pod force-deleted while it initialised its data directory lets
// two servers initialise it at once: the one left may run, but refuse root
// from other hosts (soak seed 523641379), or crash-loop (faults seed 1).
// The restore then fails, saying why, and advises deleting the volume; the
// person does, and the server's pod, which would hold the volume for ever,
// is deleted so that it goes (before, the claim stayed Terminating under
// the running pod and the MySQL never got Ready). The new volume is
// restored.
func TestDataVolumeDeletedBeforeAnyRestoreGoes(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "halfborn"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	pod := serverPodsOf(t, m)[0]
	schedule(t, &pod)
	const refused = "cannot log in to 10.0.0.7:3306 as root: ERROR 1130 (HY000): Host '10.0.0.9' is not allowed to connect to this MariaDB server"
	finishJob(t, m, restoreJobName(m.Name), false, "failed: "+refused)
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonRestoreFailed)
	c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded)
	if !strings.Contains(c.Message, refused) || !strings.Contains(c.Message, "`kubectl delete pvc "+dataPVCName(m.Name)+"`") {
		t.Errorf("Degraded says %q: want the Job's reason and the advice to delete the data volume", c.Message)
	}
	failed, old := &batchv1.Job{}, &corev1.PersistentVolumeClaim{}
	get(t, key(m, restoreJobName(m.Name)), failed)
	get(t, key(m, dataPVCName(m.Name)), old)
	deleteInUse(t, old)
	testenv.Eventually(t, "the server's pod deleted", func(ctx context.Context) error {
		p := &corev1.Pod{}
		switch err := suite.Client.Get(ctx, client.ObjectKeyFromObject(&pod), p); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case p.DeletionTimestamp.IsZero():
			return errors.New("the pod that holds the volume runs on")
		}
		return nil
	})
	// The person's part is done: Degraded says what goes on, no more what
	// to do.
	got = waitSummary(t, m, is{metav1.ConditionFalse, ReasonDataVolumeDeleted}, is{metav1.ConditionTrue, ReasonDataVolumeDeleted},
		is{metav1.ConditionTrue, ReasonDataVolumeDeleted})
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); !strings.Contains(c.Message, "is deleted so that it goes") {
		t.Errorf("Degraded says %q", c.Message)
	}
	testenv.Eventually(t, "one ServerPodDeleted event", func(ctx context.Context) error {
		if n, err := testenv.CountEvents(ctx, suite.Client, m, ReasonServerPodDeleted); err != nil || n != 1 {
			return fmt.Errorf("%d events (%w)", n, err)
		}
		return nil
	})
	// The pod stopped: the volume goes, a new one is made and restored.
	release(t, old)
	replaced(t, m, old)
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	waitNewJob(t, failed)
	finishJob(t, m, restoreJobName(m.Name), true, "no-backup free=1073741824")
	serving(t, m)
	readyFor(t, waitSummary(t, m, serves, upToDate, noProblem), true)
}

// The backup volume is the one the operator made for the backups of the
// MySQL's name, never a claim that only has its name: another MySQL's data
// volume (MySQL backup-n's is backup-n-pvc, like n's backup volume) or a
// person's claim. The condition does not advise deleting it.
func TestBackupVolumeIsNeverAStrangers(t *testing.T) {
	ns := suite.Namespace(t, nil)
	other := create(t, homework(ns, "backup-n"))
	get(t, key(other, "backup-n-pvc"), &corev1.PersistentVolumeClaim{})
	m := create(t, homework(ns, "n"))
	got := waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonNameConflict)
	msg := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded).Message
	if !strings.Contains(msg, `"backup-n-pvc"`) || !strings.Contains(msg, "It is a volume of MySQL backup-n") || !strings.Contains(msg, "keep it") ||
		strings.Contains(strings.ToLower(msg), "delete") || strings.Contains(msg, "kubectl annotate") {
		t.Errorf("Degraded says %q", msg)
	}
	// Nothing of n is ever run against it.
	if err := suite.Client.Get(ctx, key(m, m.Name), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("n's server was created on a stranger's backup volume: %v", err)
	}
	// Deleting n backs nothing up into it.
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m)
	if err := suite.Client.Get(ctx, key(m, backupJobName(m.Name)), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("a backup Job of n: %v", err)
	}
}

// A MySQL whose server never started holds nothing to back up: its deletion
// completes at once and creates nothing, whether its volume never bound or
// its pod never started its container.
func TestNeverStartedServerIsDeletedAtOnce(t *testing.T) {
	for _, state := range []string{"volume never bound", "container never started"} {
		t.Run(state, func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := create(t, homework(ns, "stillborn"))
			waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
			if state == "container never started" {
				_, pod := serverPod(t, m)
				pod.Status.Phase = corev1.PodPending
				pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mysql", State: corev1.ContainerState{
					Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `couldn't find key password in Secret`},
				}}}
				if err := suite.Client.Status().Update(ctx, pod); err != nil {
					t.Fatal(err)
				}
				waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, "CreateContainerConfigError")
			}
			if err := suite.Client.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
			waitGone(t, m)
			if err := suite.Client.Get(ctx, key(m, backupJobName(m.Name)), &batchv1.Job{}); !apierrors.IsNotFound(err) {
				t.Errorf("a backup Job for a server that never started: %v", err)
			}
			if n := eventsOf(t, m, ReasonNothingToBackUp); n != 1 {
				t.Errorf("%d %s events, want 1", n, ReasonNothingToBackUp)
			}
		})
	}
}

// A backup volume being deleted is no place for a backup: the deletion
// waits, says why, and keeps the data volume.
func TestBackupVolumeBeingDeletedHoldsTheDeletion(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "unsheltered"))
	ready(t, m, "no-backup")
	backup, restore := &corev1.PersistentVolumeClaim{}, &batchv1.Job{}
	get(t, key(m, backupPVCName(m.Name)), backup)
	get(t, key(m, restoreJobName(m.Name)), restore)
	deleteInUse(t, backup)
	// The succeeded restore Job goes: its ended pod would hold the volume
	// as long as the MySQL (the PVC protection controller counts every pod
	// scheduled with a claim), and the MySQL waits for the volume to go.
	waitGone(t, restore)
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	// The pass before the deletion may say Degraded already: the backup's
	// condition is the deletion's.
	got := waitCondition(t, m, BackupSucceeded, metav1.ConditionFalse, ReasonBackupVolumeDeleted)
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonBackupVolumeDeleted {
		t.Errorf("Degraded: %+v", c)
	}
	if err := suite.Client.Get(ctx, key(m, backupJobName(m.Name)), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("a backup Job into a volume being deleted: %v", err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	get(t, key(m, dataPVCName(m.Name)), pvc)
	if !pvc.DeletionTimestamp.IsZero() {
		t.Error("the data volume is being deleted without a backup")
	}
	// Gone, it is made again, and the backup goes into the new one.
	release(t, backup)
	j := backupJobOf(t, m)
	made := &corev1.PersistentVolumeClaim{}
	get(t, key(m, backupPVCName(m.Name)), made)
	if made.UID == backup.UID || j.Annotations[backupVolumeAnnotation] != string(made.UID) {
		t.Errorf("the backup Job is for volume %s, the new volume is %s (the old one %s)", j.Annotations[backupVolumeAnnotation], made.UID, backup.UID)
	}
	finishBackup(t, m, "backed-up otus-database-20261125T100000Z.sql.gz")
	waitGone(t, m)
}

// The restore's mark on the data volume is written even while that volume
// is being deleted: it records what the volume holds, and changes nothing
// of the server. Without it the succeeded restore Job, whose ended pod
// holds the backup volume, was never let go, and a backup volume deleted
// after that held the MySQL's deletion for good (soak seed 351730346: the
// data volume deleted before the restore, the backup volume during the
// backup before delete, the MySQL not gone 8 minutes later).
func TestRestoreIsRecordedOnADataVolumeBeingDeleted(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "condemned"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	data, backup, restore := &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaim{}, &batchv1.Job{}
	get(t, key(m, dataPVCName(m.Name)), data)
	deleteInUse(t, data)
	t.Cleanup(func() { release(t, data) })
	finishJob(t, m, restoreJobName(m.Name), true, "no-backup")
	testenv.Eventually(t, "the restore's mark on the data volume being deleted", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(data), data); err != nil {
			return err
		}
		if data.Annotations[restoredAnnotation] == "" {
			return fmt.Errorf("annotations %v", data.Annotations)
		}
		return nil
	})
	get(t, key(m, restoreJobName(m.Name)), restore)
	get(t, key(m, backupPVCName(m.Name)), backup)
	deleteInUse(t, backup)
	t.Cleanup(func() { release(t, backup) })
	// Its ended pod would hold the backup volume as long as the MySQL.
	waitGone(t, restore)
}

// A change of the data volume's spec the API server refuses (a claim's
// class cannot change) is Degraded with the server's message, and stops
// nothing else: a password change after it still runs.
func TestRefusedVolumeChangeStallsNothing(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "regrown"))
	ready(t, m, "no-backup")
	got := &mysqlv1.MySQL{}
	get(t, key(m, m.Name), got)
	// The API server takes a bigger size for a MySQL, and refuses it for
	// the data volume: envtest binds no volume, and only a bound one grows
	// (a StorageClass without allowVolumeExpansion refuses it as well).
	got.Spec.StorageSize = resource.MustParse("2Gi")
	if err := suite.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonDataVolumeRefused)
	if msg := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded).Message; !strings.Contains(msg, `persistentvolumeclaims "regrown-pvc" is forbidden`) {
		t.Errorf("Degraded does not give the API server's message: %q", msg)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready); c.Status != metav1.ConditionTrue {
		t.Errorf("the server still serves, but Ready is %+v", c)
	}
	// Ready describes the last spec carried out, not this one.
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, ReasonDataVolumeRefused)
	setPassword(t, m, "after-the-size")
	get(t, key(m, passwordJobName(m.Name)), &batchv1.Job{})
}

// spec.database cannot change: the server and its backups hold the database
// under its first name.
func TestDatabaseIsImmutable(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "fixed"))
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"database":"renamed"}}`))
	if err := suite.Client.Patch(ctx, m, patch); err == nil || !strings.Contains(err.Error(), "database cannot change") {
		t.Errorf("renaming the database: %v", err)
	}
}

// A server that started once may hold rows, whatever its pods look like
// when the MySQL is deleted: the volume says it started, and the deletion
// waits to back it up (here for a pod that cannot start) instead of going
// without a backup.
func TestStartedServerIsAlwaysBackedUp(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "once-started"))
	waitCondition(t, m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting)
	serverUp(t, m)
	testenv.Eventually(t, "the data volume marked as started", func(ctx context.Context) error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := suite.Client.Get(ctx, key(m, dataPVCName(m.Name)), pvc); err != nil {
			return err
		}
		if pvc.Annotations[startedAnnotation] != "true" {
			return fmt.Errorf("annotations %v", pvc.Annotations)
		}
		return nil
	})
	// Its restore fails, and its pod is replaced by one that cannot start.
	finishJob(t, m, restoreJobName(m.Name), false, "failed: cut off")
	if err := suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels(serverSelector(m)),
		client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	_, pod := serverPod(t, m)
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mysql", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"},
	}}}
	if err := suite.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, m, BackupSucceeded, metav1.ConditionUnknown, ReasonBackingUp)
	if msg := meta.FindStatusCondition(got.Status.Conditions, BackupSucceeded).Message; !strings.Contains(msg, mysqlv1.SkipBackupAnnotation) {
		t.Errorf("BackupSucceeded does not say how to go without a backup: %q", msg)
	}
	if n := eventsOf(t, m, ReasonNothingToBackUp); n != 0 {
		t.Errorf("%d %s events for a server that started", n, ReasonNothingToBackUp)
	}
	// The pod starts: the backup runs.
	serverUp(t, m)
	backupJobOf(t, m)
	finishBackup(t, m, "backed-up otus-database-20261125T100000Z.sql.gz")
	waitGone(t, m)
}

// keeps fails t unless m is still there (being deleted), and its server and
// its data volume too, neither being deleted: nothing of the data has gone.
func keeps(t *testing.T, m *mysqlv1.MySQL, why string) {
	t.Helper()
	if err := suite.Client.Get(ctx, key(m, m.Name), &mysqlv1.MySQL{}); err != nil {
		t.Fatalf("%s: MySQL %s is gone (%v)", why, m.Name, err)
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.PersistentVolumeClaim{}} {
		name := m.Name
		if _, pvc := obj.(*corev1.PersistentVolumeClaim); pvc {
			name = dataPVCName(m.Name)
		}
		if err := suite.Client.Get(ctx, key(m, name), obj); err != nil || !obj.GetDeletionTimestamp().IsZero() {
			t.Fatalf("%s: %T %s is gone or going (%v)", why, obj, name, err)
		}
	}
}

// backedUpAgain waits for the backup to be told lost, with its Job and
// verify Job gone, and m with its data kept; then, once the old backup
// volume has gone (release lets it), for a new backup Job on a new backup
// volume, which finishes the deletion.
func backedUpAgain(t *testing.T, m *mysqlv1.MySQL, first *batchv1.Job, old *corev1.PersistentVolumeClaim, release func()) {
	t.Helper()
	testenv.Eventually(t, "a BackupVolumeLost warning", func(ctx context.Context) error {
		if n := eventsOf(t, m, ReasonBackupVolumeLost); n != 1 {
			return fmt.Errorf("%d %s events", n, ReasonBackupVolumeLost)
		}
		return nil
	})
	waitGone(t, first)
	if err := suite.Client.Get(ctx, key(m, verifyJobName(m.Name)), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("the verify Job of a lost backup: %v", err)
	}
	keeps(t, m, "a backup on a volume being deleted counted")
	release()
	waitNewJob(t, first)
	again := backupJobOf(t, m)
	made := &corev1.PersistentVolumeClaim{}
	get(t, key(m, backupPVCName(m.Name)), made)
	if made.UID == old.UID || again.Annotations[backupVolumeAnnotation] != string(made.UID) || !made.DeletionTimestamp.IsZero() {
		t.Errorf("the new backup Job is for volume %s; the backup volume is %s (deleting: %v), the lost one %s",
			again.Annotations[backupVolumeAnnotation], made.UID, !made.DeletionTimestamp.IsZero(), old.UID)
	}
	keeps(t, m, "a new backup started")
	finishBackup(t, m, "backed-up otus-database-20261125T110000Z.sql.gz")
	waitGone(t, m)
}

// The backup volume deleted (or replaced) at any point of the backup before
// delete never costs a row: a backup counts only once the verify Job found
// its dump on the volume, and the volume, read from the API server after
// that, is still the one both Jobs used, bound, and not being deleted.
// Until then the MySQL, its server and its data volume stay, and the backup
// runs again on a new volume. (Before: a dump written to a volume being
// deleted counted, the data volume was deleted, and every row went with
// the backup volume.)
func TestBackupVolumeLostAtAnyPointOfTheBackup(t *testing.T) {
	const dump = "backed-up otus-database-20261125T100000Z.sql.gz free=1073741824 size=870"
	for _, tt := range []struct {
		name string
		// lose loses the backup volume at one point of the backup before
		// delete; it returns what lets the lost volume go.
		lose func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func()
	}{
		{"during the dump", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			deleteInUse(t, backup)
			return func() { release(t, backup) }
		}},
		{"as the dump completes, the operator down", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			suite.Down(t, func() {
				deleteInUse(t, backup)
				finishJob(t, m, backupJobName(m.Name), true, dump)
			})
			return func() { release(t, backup) }
		}},
		{"right after the dump completed", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			finishJob(t, m, backupJobName(m.Name), true, dump)
			deleteInUse(t, backup)
			return func() { release(t, backup) }
		}},
		{"during the verify", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			finishJob(t, m, backupJobName(m.Name), true, dump)
			verifyJobOf(t, m)
			deleteInUse(t, backup)
			return func() { release(t, backup) }
		}},
		{"after the verify, the operator down", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			finishJob(t, m, backupJobName(m.Name), true, dump)
			v := verifyJobOf(t, m)
			suite.Down(t, func() {
				finishJob(t, m, v.Name, true, "verified otus-database-20261125T100000Z.sql.gz")
				deleteInUse(t, backup)
			})
			return func() { release(t, backup) }
		}},
		{"replaced during the verify, the operator down", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			finishJob(t, m, backupJobName(m.Name), true, dump)
			verifyJobOf(t, m)
			suite.Down(t, func() { replace(t, backup) })
			return func() {}
		}},
		{"replaced after the verify, the operator down", func(t *testing.T, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim) func() {
			finishJob(t, m, backupJobName(m.Name), true, dump)
			v := verifyJobOf(t, m)
			suite.Down(t, func() {
				finishJob(t, m, v.Name, true, "verified otus-database-20261125T100000Z.sql.gz")
				replace(t, backup)
			})
			return func() {}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := create(t, homework(ns, "lost"))
			ready(t, m, "no-backup")
			if err := suite.Client.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
			first := backupJobOf(t, m)
			backup := &corev1.PersistentVolumeClaim{}
			get(t, key(m, backupPVCName(m.Name)), backup)
			if first.Annotations[backupVolumeAnnotation] != string(backup.UID) {
				t.Errorf("the backup Job is for volume %q, the backup volume is %s", first.Annotations[backupVolumeAnnotation], backup.UID)
			}
			backedUpAgain(t, m, first, backup, tt.lose(t, m, backup))
		})
	}
}

// replace deletes claim pvc and makes another in its place, as a person's
// kubectl apply of a copy of it would: another volume, the same name, and
// nothing being deleted for the operator to see.
func replace(t *testing.T, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	if err := suite.Client.Delete(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	release(t, pvc)
	waitGone(t, pvc)
	twin := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pvc.Name, Namespace: pvc.Namespace,
		Labels: pvc.Labels, Annotations: pvc.Annotations}, Spec: pvc.Spec}
	if err := suite.Client.Create(ctx, twin); err != nil {
		t.Fatal(err)
	}
	bind(t, client.ObjectKeyFromObject(twin))
}

// A verify Job that does not find the dump as the backup reported it
// keeps the MySQL and its data, and says how to back up again.
func TestUnverifiedBackupKeepsTheData(t *testing.T) {
	ns := suite.Namespace(t, nil)
	m := create(t, homework(ns, "unverified"))
	ready(t, m, "restored otus-database-20261125T090000Z.sql.gz")
	if err := suite.Client.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	first := backupJobOf(t, m)
	finishJob(t, m, first.Name, true, "backed-up-aside otus-database-20261125T100000Z.sql.gz free=1073741824 size=870")
	v := verifyJobOf(t, m)
	// What it checks: the reported name and size, latest left alone (the
	// dump was kept aside), on the backup volume mounted read-only; it is
	// given no password, and has no owner a foreground deletion would
	// take it with.
	wantEnv(t, v, scripts.EnvVerifyDump, "otus-database-20261125T100000Z.sql.gz", "the dump the backup reported")
	wantEnv(t, v, scripts.EnvVerifySize, "870", "the size the backup reported")
	wantEnv(t, v, scripts.EnvVerifyLatest, "<unset>", "a dump kept aside")
	if mounts := v.Spec.Template.Spec.Containers[0].VolumeMounts; len(mounts) != 1 || !mounts[0].ReadOnly {
		t.Errorf("the verify Job mounts %+v, want the backup volume read-only", mounts)
	}
	assertNoPassword(t, v, "otuspassword")
	for _, e := range v.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			t.Errorf("the verify Job reads %s from %+v: it needs no credentials", e.Name, e.ValueFrom)
		}
	}
	if len(v.OwnerReferences) != 0 || !ours(v, m) || v.Annotations[backupJobAnnotation] != string(first.UID) {
		t.Errorf("verify Job: owners %v, annotations %v", v.OwnerReferences, v.Annotations)
	}
	finishJob(t, m, v.Name, false, "failed: otus-database-20261125T100000Z.sql.gz, which the backup reported, is not on the backup volume")
	got := waitCondition(t, m, BackupSucceeded, metav1.ConditionFalse, ReasonNotVerified)
	msg := meta.FindStatusCondition(got.Status.Conditions, BackupSucceeded).Message
	if !strings.Contains(msg, "kubectl delete job backup-unverified-job verify-unverified-job") {
		t.Errorf("BackupSucceeded does not say how to back up again: %q", msg)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonNotVerified {
		t.Errorf("Degraded: %+v", c)
	}
	keeps(t, m, "an unverified backup counted")
	for _, j := range []*batchv1.Job{first, v} {
		if err := suite.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
	}
	waitNewJob(t, first)
	finishBackup(t, m, "backed-up otus-database-20261125T110000Z.sql.gz")
	waitGone(t, m)
}

// A MySQL whose finalizer was removed by hand during its backup leaves its
// credentials and data volume behind. The next MySQL of the same name is
// told what each holds and how to keep or adopt it, never to delete it;
// adopting both, as told, runs the new MySQL on them as they are.
func TestEarlierMySQLsDataIsKeptAndAdoptable(t *testing.T) {
	ns := suite.Namespace(t, nil)
	first := create(t, homework(ns, "orphaned"))
	ready(t, first, "no-backup")
	if err := suite.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	backupJobOf(t, first)
	got := &mysqlv1.MySQL{}
	get(t, key(first, first.Name), got)
	patch := client.MergeFrom(got.DeepCopy())
	got.Finalizers = nil
	if err := suite.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	waitGone(t, got)
	creds, data := &corev1.Secret{}, &corev1.PersistentVolumeClaim{}
	get(t, key(first, credentialsName(first.Name)), creds)
	get(t, key(first, dataPVCName(first.Name)), data)

	m := homework(ns, "orphaned")
	m.Spec.Password = "another-one"
	m = create(t, m)
	for _, held := range []struct {
		obj        client.Object
		kind, what string
	}{
		{creds, "secret", "the root password of the data volume orphaned-pvc"},
		{data, "pvc", "the data of an earlier MySQL named orphaned"},
	} {
		var msg string
		testenv.Eventually(t, "a NameConflict on "+held.obj.GetName(), func(ctx context.Context) error {
			got := &mysqlv1.MySQL{}
			if err := suite.Client.Get(ctx, key(m, m.Name), got); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); c != nil && c.Reason == ReasonNameConflict {
				if msg = c.Message; strings.Contains(msg, `"`+held.obj.GetName()+`"`) {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		})
		adopt := fmt.Sprintf("kubectl annotate %s %s %s=%s --overwrite", held.kind, held.obj.GetName(), uidAnnotation, m.UID)
		if !strings.Contains(msg, held.what) || !strings.Contains(msg, string(first.UID)) || !strings.Contains(msg, "Keep it") ||
			!strings.Contains(msg, adopt) || strings.Contains(strings.ToLower(msg), "delete") {
			t.Errorf("Degraded says %q; want what it holds, to keep it, and %q, never to delete it", msg, adopt)
		}
		// As the message says.
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+uidAnnotation+`":"`+string(m.UID)+`"}}}`))
		if err := suite.Client.Patch(ctx, held.obj, patch); err != nil {
			t.Fatal(err)
		}
	}
	// Both adopted, the next object in the way is the earlier server's
	// Service, which holds no data.
	waitCondition(t, m, conditions.Degraded, metav1.ConditionTrue, ReasonNameConflict)
	testenv.Eventually(t, "the NameConflict to move on to the Service", func(ctx context.Context) error {
		got := &mysqlv1.MySQL{}
		if err := suite.Client.Get(ctx, key(m, m.Name), got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); c == nil || !strings.Contains(c.Message, `Service "orphaned"`) {
			return fmt.Errorf("Degraded %+v", c)
		}
		return nil
	})
	after := &corev1.PersistentVolumeClaim{}
	get(t, key(m, dataPVCName(m.Name)), after)
	if after.UID != data.UID || !after.DeletionTimestamp.IsZero() || after.Annotations[restoredAnnotation] != restoredNone {
		t.Errorf("the adopted data volume: UID %s (was %s), annotations %v", after.UID, data.UID, after.Annotations)
	}
	if got := credentials(t, m)[keyPassword]; got != "otuspassword" {
		t.Errorf("the adopted credentials hold %q, want the password the data was written with", got)
	}
}

// A server pod replaced under the backup (a kill, a node lost) leaves the
// backup Job talking to an address that is gone: the backup starts again
// from the new pod, whether the Job still waits or has failed, and the
// MySQL goes once that backup counts. (Before: the Job failed against the
// old address, and the deletion waited for a person.)
func TestBackupFollowsAReplacedServerPod(t *testing.T) {
	for _, state := range []string{"running", "failed"} {
		t.Run(state, func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := create(t, homework(ns, "moved"))
			ready(t, m, "no-backup")
			if err := suite.Client.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
			first := backupJobOf(t, m)
			old := serverPodsOf(t, m)
			if len(old) != 1 || first.Annotations[serverPodAnnotation] != string(old[0].UID) {
				t.Fatalf("the backup Job dumps from pod %q, want the server pod", first.Annotations[serverPodAnnotation])
			}
			if state == "failed" {
				finishJob(t, m, first.Name, false, "failed: the MySQL server at 10.0.0.7:3306 did not answer within 300s")
			}
			if err := suite.Client.Delete(ctx, &old[0], client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			serverUp(t, m)
			waitNewJob(t, first)
			again := backupJobOf(t, m)
			now := serverPodsOf(t, m)
			if len(now) != 1 || again.Annotations[serverPodAnnotation] != string(now[0].UID) || now[0].UID == old[0].UID {
				t.Errorf("the new backup Job dumps from pod %q, want the new server pod", again.Annotations[serverPodAnnotation])
			}
			keeps(t, m, "the server pod was replaced during the backup")
			finishBackup(t, m, "backed-up otus-database-20261125T100000Z.sql.gz")
			waitGone(t, m)
		})
	}
}

// The backup volume deleted before the restore of a new data volume read
// it: the backups on it are on no server, and the message says so and how
// to keep them (the PersistentVolume kept), never to let it go. A restored
// data volume, an unbound backup volume or another reason keep the error
// as it was.
func TestUnreadBackupsAreKept(t *testing.T) {
	m := &mysqlv1.MySQL{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	deleting := conditions.Block(ReasonBackupVolumeDeleted, "the backup volume is being deleted")
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: backupPVCName("db")},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-42"}}
	unbound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: backupPVCName("db")}}
	other := conditions.Block(conditions.ReasonNameConflict, "not ours")
	for _, c := range []struct {
		name     string
		err      error
		backup   *corev1.PersistentVolumeClaim
		restored bool
		same     bool
	}{
		{"before the restore", deleting, bound, false, false},
		{"after the restore", deleting, bound, true, true},
		{"never bound", deleting, unbound, false, true},
		{"another reason", other, bound, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := unreadBackups(c.err, m, c.backup, c.restored)
			if c.same {
				if !errors.Is(got, c.err) {
					t.Errorf("got %v, want the error as it was", got)
				}
				return
			}
			reason, msg, blocked, _ := conditions.Reported(got)
			for _, want := range []string{"before db's restore read it", "kubectl patch pv pv-42", "persistentVolumeReclaimPolicy", "Retain"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the message does not say %q: %s", want, msg)
				}
			}
			if reason != ReasonBackupVolumeDeleted || !blocked || strings.Contains(strings.ToLower(msg), "delete the") {
				t.Errorf("%s (blocked %v): %s", reason, blocked, msg)
			}
		})
	}
}

// A server pod replaced under a password change (a kill, a node lost)
// leaves the password Job talking to an address that is gone: the change
// starts again on the new pod, whether the Job still waits or has failed,
// and succeeds there. (Before: it waited for the old address until the
// Job's deadline; soak seed 103790856.)
func TestPasswordFollowsAReplacedServerPod(t *testing.T) {
	for _, state := range []string{"running", "failed"} {
		t.Run(state, func(t *testing.T) {
			ns := suite.Namespace(t, nil)
			m := create(t, homework(ns, "moved"))
			ready(t, m, "no-backup")
			setPassword(t, m, "n3w-pass")
			first := &batchv1.Job{}
			testenv.Eventually(t, "the password Job", func(ctx context.Context) error {
				return suite.Client.Get(ctx, key(m, passwordJobName(m.Name)), first)
			})
			old := serverPodsOf(t, m)
			if len(old) != 1 || first.Annotations[serverPodAnnotation] != string(old[0].UID) {
				t.Fatalf("the password Job talks to pod %q, want the server pod", first.Annotations[serverPodAnnotation])
			}
			if state == "failed" {
				finishJob(t, m, first.Name, false, "failed: the MySQL server at 10.0.0.7:3306 did not answer within 300s")
			}
			if err := suite.Client.Delete(ctx, &old[0], client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			serverUp(t, m)
			waitNewJob(t, first)
			again := &batchv1.Job{}
			get(t, key(m, passwordJobName(m.Name)), again)
			now := serverPodsOf(t, m)
			if len(now) != 1 || again.Annotations[serverPodAnnotation] != string(now[0].UID) || now[0].UID == old[0].UID {
				t.Errorf("the new password Job talks to pod %q, want the new server pod", again.Annotations[serverPodAnnotation])
			}
			if got := envNamed(again, scripts.EnvHost); got == nil || got.Value != now[0].Status.PodIP {
				t.Errorf("the new password Job's host is %v, want the new pod's address %s", got, now[0].Status.PodIP)
			}
			finishJob(t, m, again.Name, true, "password-changed")
			waitCondition(t, m, PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged)
			if creds := credentials(t, m); creds[keyPassword] != "n3w-pass" || creds[keyPendingPassword] != "" {
				t.Errorf("credentials after the change on the new pod: %v", creds)
			}
		})
	}
}
