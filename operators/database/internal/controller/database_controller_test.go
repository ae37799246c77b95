package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

func createDatabase(t *testing.T, ns, name string, spec dbv1.DatabaseSpec) *dbv1.Database {
	t.Helper()
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := suite.Client.Create(context.Background(), db); err != nil {
		t.Fatalf("creating Database %s: %v", name, err)
	}
	return db
}

// getPod waits for the Database's Pod and returns it.
func getPod(t *testing.T, db *dbv1.Database) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testenv.Eventually(t, "the Pod of "+db.Name, func(ctx context.Context) error {
		return suite.Client.Get(ctx, client.ObjectKeyFromObject(db), pod)
	})
	return pod
}

// markRunning does what a kubelet would: envtest runs no node.
func markRunning(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := suite.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatalf("marking Pod %s running: %v", pod.Name, err)
	}
}

// waitCondition waits until the Database's condition typ has status and reason.
func waitCondition(t *testing.T, db *dbv1.Database, typ string, status metav1.ConditionStatus, reason string) *dbv1.Database {
	t.Helper()
	got := &dbv1.Database{}
	testenv.Eventually(t, fmt.Sprintf("%s %s=%s (%s)", db.Name, typ, status, reason), func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(db), got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == typ && c.Status == status && c.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("conditions are %+v", got.Status.Conditions)
	})
	return got
}

// writesUntilReady watches the Databases of ns and, once called, counts
// the writes to name (no finalizer: status writes) until it says Ready.
func writesUntilReady(t *testing.T, ns, name string) func() int {
	t.Helper()
	w, err := suite.Client.Watch(context.Background(), &dbv1.DatabaseList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return func() int {
		writes := 0
		timeout := time.After(time.Minute)
		for {
			select {
			case ev := <-w.ResultChan():
				db, ok := ev.Object.(*dbv1.Database)
				if !ok || db.Name != name || ev.Type != watch.Modified {
					continue
				}
				writes++
				if meta.IsStatusConditionTrue(db.Status.Conditions, conditions.Ready) {
					return writes
				}
			case <-timeout:
				t.Fatalf("Database %s not Ready after %d writes and a minute", name, writes)
			}
		}
	}
}

func TestMongoBecomesPodAndNodePortService(t *testing.T) {
	ns := suite.Namespace(t, nil)
	writes := writesUntilReady(t, ns, "mongo-db")
	db := createDatabase(t, ns, "mongo-db", dbv1.DatabaseSpec{Type: dbv1.Mongo})

	pod := getPod(t, db)
	if !metav1.IsControlledBy(pod, db) {
		t.Errorf("Pod is not controlled by the Database: %+v", pod.OwnerReferences)
	}
	if img := pod.Spec.Containers[0].Image; img != "mongo:4.0" {
		t.Errorf("image %s, want mongo:4.0", img)
	}
	waitCondition(t, db, conditions.Ready, metav1.ConditionFalse, ReasonPodPending)

	svc := &corev1.Service{}
	if err := suite.Client.Get(context.Background(), client.ObjectKeyFromObject(db), svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort == 0 || !metav1.IsControlledBy(svc, db) {
		t.Errorf("want an owned NodePort Service with an allocated port, got %+v", svc.Spec)
	}

	markRunning(t, pod)
	got := waitCondition(t, db, conditions.Ready, metav1.ConditionTrue, ReasonRunning)
	if got.Status.NodePort != svc.Spec.Ports[0].NodePort {
		t.Errorf("status.nodePort %d, Service has %d", got.Status.NodePort, svc.Spec.Ports[0].NodePort)
	}
	if got.Status.Message != "Pod and Service created by Database mongo-db" {
		t.Errorf("message %q", got.Status.Message)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	// One write per state a person sees (Pending, then Ready): the pass
	// that creates the children leaves the status to the pass their
	// events start, which sees them.
	if n := writes(); n != 2 {
		t.Errorf("the status was written %d times on the way to Ready, want 2 (Pending, Ready)", n)
	}
}

func TestBadInputIsRefusedAtAdmission(t *testing.T) {
	ns := suite.Namespace(t, nil)
	ctx := context.Background()
	tests := []struct {
		name    string
		spec    map[string]any
		message string
	}{
		{"no type", map[string]any{}, "spec.type: Required value"},
		{"unknown type", map[string]any{"type": "postgres"}, `spec.type: Unsupported value: "postgres": supported values: "mongo", "mysql"`},
		{"secret for mongo", map[string]any{"type": "mongo", "rootPasswordSecretRef": map[string]any{"name": "s"}}, "rootPasswordSecretRef is only for type mysql"},
		{"a type in capitals", map[string]any{"type": "MySQL"}, `spec.type: Unsupported value: "MySQL"`},
		{"an empty image", map[string]any{"type": "mongo", "image": ""}, "spec.image in body should be at least 1 chars long"},
		{"an image name too long", map[string]any{"type": "mongo", "image": strings.Repeat("i", 513)}, "spec.image: Too long"},
		{"a secret without its name", map[string]any{"type": "mysql", "rootPasswordSecretRef": map[string]any{"key": "k"}}, "spec.rootPasswordSecretRef.name: Required value"},
		{"a secret with an empty key", map[string]any{"type": "mysql", "rootPasswordSecretRef": map[string]any{"name": "s", "key": ""}}, "spec.rootPasswordSecretRef.key in body should be at least 1 chars long"},
		{"the seed's replicas", map[string]any{"type": "mongo", "replicas": 2}, `unknown field "spec.replicas"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// kubectl apply asks for strict field validation, as here.
			err := suite.Client.Create(ctx, rawDatabase(ns, "bad", tt.spec), client.FieldValidation("Strict"))
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an admission error containing %q, got %v", tt.message, err)
			}
		})
	}
	// A dot in the name was accepted once, and its Service refused in a loop.
	names := []struct{ name, message string }{
		{"my.db", "must be a DNS label"},
		{"1db", "must be a DNS label"},
		{"db-", "must be a DNS label"},
		{strings.Repeat("d", 64), "at most 63 characters"},
	}
	for _, n := range names {
		t.Run("the name "+n.name, func(t *testing.T) {
			err := suite.Client.Create(ctx, rawDatabase(ns, n.name, map[string]any{"type": "mongo"}))
			if err == nil || !strings.Contains(err.Error(), n.message) {
				t.Fatalf("want an admission error containing %q, got %v", n.message, err)
			}
		})
	}

	t.Run("type change", func(t *testing.T) {
		db := createDatabase(t, ns, "immutable", dbv1.DatabaseSpec{Type: dbv1.Mongo})
		patch := client.MergeFrom(db.DeepCopy())
		db.Spec.Type = dbv1.MySQL
		err := suite.Client.Patch(ctx, db, patch)
		if want := "type is immutable: delete the Database and create it again with the other type"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("want %q, got %v", want, err)
		}
	})
}

// rawDatabase builds a Database from a free-form spec, so the API server, not
// the Go types, judges it.
func rawDatabase(ns, name string, spec map[string]any) client.Object {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(dbv1.GroupVersion.String())
	u.SetKind("Database")
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = spec
	return u
}

func TestMySQLGetsAGeneratedPasswordKeptSecret(t *testing.T) {
	ns := suite.Namespace(t, nil)
	db := createDatabase(t, ns, "mysql-db", dbv1.DatabaseSpec{Type: dbv1.MySQL})
	pod := getPod(t, db)

	secret := &corev1.Secret{}
	if err := suite.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "mysql-db-root-password"}, secret); err != nil {
		t.Fatalf("the generated Secret: %v", err)
	}
	password := string(secret.Data["password"])
	if len(password) < 20 || !metav1.IsControlledBy(secret, db) {
		t.Fatalf("want an owned Secret with a long random password, got %d characters, owners %+v", len(password), secret.OwnerReferences)
	}
	env := pod.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Value != "" || env[0].ValueFrom.SecretKeyRef.Name != secret.Name {
		t.Errorf("MYSQL_ROOT_PASSWORD must come from the Secret, got %+v", env)
	}
	if pod.Spec.Containers[0].Image != "mysql:8.0" || pod.Spec.Containers[0].Ports[0].ContainerPort != 3306 {
		t.Errorf("want mysql:8.0 on 3306, got %+v", pod.Spec.Containers[0])
	}

	markRunning(t, pod)
	got := waitCondition(t, db, conditions.Ready, metav1.ConditionTrue, ReasonRunning)
	if got.Status.RootPasswordSecret != secret.Name {
		t.Errorf("status.rootPasswordSecret %q, want %q", got.Status.RootPasswordSecret, secret.Name)
	}
	// The password appears in no status and no event.
	var events eventsv1.EventList
	if err := suite.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Error("no events were recorded")
	}
	for _, e := range events.Items {
		if strings.Contains(e.Note, password) {
			t.Errorf("event %q shows the password", e.Note)
		}
	}
	if strings.Contains(fmt.Sprintf("%+v", got.Status), password) {
		t.Error("the status shows the password")
	}
}

func TestMissingUserSecretIsReportedThenUsed(t *testing.T) {
	ns := suite.Namespace(t, nil)
	db := createDatabase(t, ns, "mine", dbv1.DatabaseSpec{
		Type:                  dbv1.MySQL,
		RootPasswordSecretRef: &dbv1.SecretKeyRef{Name: "my-root", Key: "pw"},
	})
	got := waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, ReasonSecretNotFound)
	if msg := condition(got, conditions.Ready).Message; !strings.Contains(msg, `Secret "my-root" not found`) {
		t.Errorf("the Ready message should name the Secret and the fix, got %q", msg)
	}
	if err := suite.Client.Get(context.Background(), client.ObjectKeyFromObject(db), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("no Pod may start without its password, got %v", err)
	}

	// Creating the Secret is enough: the operator watches it.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-root", Namespace: ns},
		StringData: map[string]string{"pw": "s3cret-pw"},
	}
	if err := suite.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	pod := getPod(t, db)
	if ref := pod.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef; ref.Name != "my-root" || ref.Key != "pw" {
		t.Errorf("env refers to %+v, want my-root/pw", ref)
	}
}

func TestEndedOrDeletedPodIsReplaced(t *testing.T) {
	ns := suite.Namespace(t, nil)
	db := createDatabase(t, ns, "healing", dbv1.DatabaseSpec{Type: dbv1.Mongo})
	ctx := context.Background()

	first := getPod(t, db)
	first.Status.Phase = corev1.PodFailed
	first.Status.Reason = "Evicted"
	if err := suite.Client.Status().Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := waitNewPod(t, db, first.UID)

	// envtest has no kubelet, so a deleted Pod goes at once: the operator
	// must notice and create it again.
	if err := suite.Client.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitNewPod(t, db, second.UID)
}

func waitNewPod(t *testing.T, db *dbv1.Database, old types.UID) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testenv.Eventually(t, "a new Pod replacing "+string(old), func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(db), pod); err != nil {
			return err
		}
		if pod.UID == old {
			return errors.New("still the old Pod")
		}
		return nil
	})
	return pod
}

func TestImageChangeReplacesPod(t *testing.T) {
	ns := suite.Namespace(t, nil)
	db := createDatabase(t, ns, "upgrade", dbv1.DatabaseSpec{Type: dbv1.Mongo})
	first := getPod(t, db)
	patch := client.MergeFrom(db.DeepCopy())
	db.Spec.Image = "mongo:4.4"
	if err := suite.Client.Patch(context.Background(), db, patch); err != nil {
		t.Fatal(err)
	}
	if got := waitNewPod(t, db, first.UID); got.Spec.Containers[0].Image != "mongo:4.4" {
		t.Errorf("new Pod runs %s, want mongo:4.4", got.Spec.Containers[0].Image)
	}
}

func TestPodsPassRestrictedPodSecurity(t *testing.T) {
	ns := suite.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	for _, typ := range []dbv1.Type{dbv1.Mongo, dbv1.MySQL} {
		db := createDatabase(t, ns, string(typ), dbv1.DatabaseSpec{Type: typ})
		getPod(t, db) // admitted by the API server's PodSecurity admission
	}
}

func TestForeignPodIsNotTakenOver(t *testing.T) {
	ns := suite.Namespace(t, nil)
	ctx := context.Background()
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if err := suite.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	db := createDatabase(t, ns, "taken", dbv1.DatabaseSpec{Type: dbv1.Mongo})
	waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, ReasonNameConflict)
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil || foreign.Spec.Containers[0].Image != "busybox" {
		t.Errorf("the foreign Pod was changed: %v %+v", err, foreign.Spec.Containers)
	}

	// A Service, too: outside the operator's cache (it caches only what it
	// manages), seen through the API server and left alone.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "service-taken", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "web"}},
	}
	if err := suite.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	db = createDatabase(t, ns, "service-taken", dbv1.DatabaseSpec{Type: dbv1.Mongo})
	got := waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, ReasonNameConflict)
	if d := condition(got, conditions.Degraded); !strings.Contains(d.Message, `Service "service-taken" exists`) {
		t.Errorf("Degraded says %q", d.Message)
	}
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil || svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Selector["app"] != "web" {
		t.Errorf("the foreign Service was changed: %v %+v", err, svc.Spec)
	}
}

func condition(db *dbv1.Database, typ string) metav1.Condition {
	for _, c := range db.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// A pod the kubelet cannot run (an image it cannot pull, a crash loop) makes
// the Database Degraded with the kubelet's reason within one pass, with one
// Warning event per reason, not one per pass; fixed, it is Ready again.
func TestStuckPodIsDegradedUntilFixed(t *testing.T) {
	ns := suite.Namespace(t, nil)
	ctx := context.Background()
	db := createDatabase(t, ns, "stuck", dbv1.DatabaseSpec{Type: dbv1.MySQL, Image: "mysql:9.9-no-such-tag"})
	pod := getPod(t, db)
	wait := func(reason, message string) {
		t.Helper()
		pod.Status.Phase = corev1.PodPending
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "mysql", Image: db.Spec.Image, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message},
		}}}
		if err := suite.Client.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}

	wait("ImagePullBackOff", `Back-off pulling image "mysql:9.9-no-such-tag"`)
	got := waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, "ImagePullBackOff")
	if d := condition(got, conditions.Degraded); !strings.Contains(d.Message, "container mysql of pod stuck") || !strings.Contains(d.Message, "mysql:9.9-no-such-tag") {
		t.Errorf("Degraded says %q: not which container, nor what the kubelet said", d.Message)
	}
	if r, p := condition(got, conditions.Ready), condition(got, conditions.Progressing); r.Status != metav1.ConditionFalse || p.Status != metav1.ConditionFalse {
		t.Errorf("Ready %s, Progressing %s: want both False while a person must act", r.Status, p.Status)
	}
	// The same problem said again: the status follows, no new event.
	wait("ImagePullBackOff", "Back-off pulling image, again")
	testenv.Eventually(t, "Degraded says the kubelet's new message", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(db), got); err != nil {
			return err
		}
		if d := condition(got, conditions.Degraded); !strings.Contains(d.Message, "again") {
			return fmt.Errorf("Degraded: %q", d.Message)
		}
		return nil
	})
	// Another problem: a new event, recorded after any repeat of the first.
	pod.Status.ContainerStatuses[0].RestartCount = 3
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	wait("CrashLoopBackOff", "back-off 40s restarting failed container")
	waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, "CrashLoopBackOff")
	testenv.Eventually(t, "a CrashLoopBackOff warning", func(ctx context.Context) error {
		if n, err := testenv.CountEvents(ctx, suite.Client, db, "CrashLoopBackOff"); err != nil || n != 1 {
			return fmt.Errorf("%d CrashLoopBackOff events (%w)", n, err)
		}
		return nil
	})
	if n, err := testenv.CountEvents(ctx, suite.Client, db, "ImagePullBackOff"); err != nil || n != 1 {
		t.Errorf("%d ImagePullBackOff events (%v) for one problem seen on several passes, want 1", n, err)
	}

	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	markRunning(t, pod)
	got = waitCondition(t, db, conditions.Ready, metav1.ConditionTrue, ReasonRunning)
	if d := condition(got, conditions.Degraded); d.Status != metav1.ConditionFalse {
		t.Errorf("fixed, and still Degraded: %+v", d)
	}
}

func TestRefusedReplacementKeepsRunningPod(t *testing.T) {
	ctx := context.Background()
	ns := suite.RefusingNamespace(t, "mongo:refused")
	db := createDatabase(t, ns, "kept", dbv1.DatabaseSpec{Type: dbv1.Mongo})
	first := getPod(t, db)
	markRunning(t, first)
	waitCondition(t, db, conditions.Ready, metav1.ConditionTrue, ReasonRunning)
	patch := client.MergeFrom(db.DeepCopy())
	db.Spec.Image = "mongo:refused"
	if err := suite.Client.Patch(ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonRefused)
	if d := condition(got, conditions.Degraded); !strings.Contains(d.Message, "the running one stays") || !strings.Contains(d.Message, "mongo:refused is not allowed here") {
		t.Errorf("Degraded says %q: not that the running Pod stays, nor the policy's message", d.Message)
	}
	if got.Status.ObservedGeneration >= got.Generation {
		t.Errorf("observedGeneration %d for generation %d, whose Pod was refused", got.Status.ObservedGeneration, got.Generation)
	}
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, conditions.ReasonRefused)
	pod := &corev1.Pod{}
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(db), pod); err != nil {
		t.Fatal(err)
	}
	if pod.UID != first.UID || !pod.DeletionTimestamp.IsZero() {
		t.Fatalf("the running Pod was deleted for a replacement the API server refuses")
	}

	// A spec the API server takes replaces it.
	patch = client.MergeFrom(db.DeepCopy())
	db.Spec.Image = "mongo:4.4"
	if err := suite.Client.Patch(ctx, db, patch); err != nil {
		t.Fatal(err)
	}
	waitNewPod(t, db, first.UID)
}

func TestDeletedGeneratedSecretOfRunningServerIsReported(t *testing.T) {
	ctx := context.Background()
	ns := suite.Namespace(t, nil)
	db := createDatabase(t, ns, "lost", dbv1.DatabaseSpec{Type: dbv1.MySQL})
	first := getPod(t, db)
	markRunning(t, first)
	waitCondition(t, db, conditions.Ready, metav1.ConditionTrue, ReasonRunning)
	key := types.NamespacedName{Namespace: ns, Name: "lost-root-password"}
	secret := &corev1.Secret{}
	if err := suite.Client.Get(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}

	got := waitCondition(t, db, conditions.Degraded, metav1.ConditionTrue, ReasonPasswordLost)
	if msg := condition(got, conditions.Degraded).Message; !strings.Contains(msg, `Delete Pod "lost"`) {
		t.Errorf("Degraded says %q: not what to do", msg)
	}
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, ReasonPasswordLost)
	if err := suite.Client.Get(ctx, key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a new password was generated for a server started with the old one (%v)", err)
	}

	// A new server takes a new password.
	if err := suite.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitNewPod(t, db, first.UID)
	testenv.Eventually(t, "a new generated Secret", func(ctx context.Context) error {
		return suite.Client.Get(ctx, key, &corev1.Secret{})
	})
}
