package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
)

// thing is the smallest custom resource the shape works on.
type thing struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            thingStatus `json:"status,omitempty"`
}

type thingStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Note               string             `json:"note,omitempty"`
}

func (t *thing) StatusConditions() *[]metav1.Condition { return &t.Status.Conditions }
func (t *thing) SetObservedGeneration(g int64)         { t.Status.ObservedGeneration = g }
func (t *thing) GetObservedGeneration() int64          { return t.Status.ObservedGeneration }
func (t *thing) DeepCopyObject() runtime.Object {
	c := *t
	t.DeepCopyInto(&c.ObjectMeta)
	c.Status.Conditions = append([]metav1.Condition(nil), t.Status.Conditions...)
	return &c
}

type thingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []thing `json:"items"`
}

func (l *thingList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = nil
	for i := range l.Items {
		c.Items = append(c.Items, *l.Items[i].DeepCopyObject().(*thing))
	}
	return &c
}

const finalizer = "example.org/keep"

var key = client.ObjectKey{Namespace: "ns", Name: "t"}

// fixture is a fake API server holding one thing, and Steps whose Normal
// returns what the test sets in result and err.
type fixture struct {
	c        client.Client
	recorder *events.FakeRecorder
	told     conditions.Told
	result   ctrl.Result
	err      error
	normals  int
	// sawGeneration is the observedGeneration the last Normal step saw.
	sawGeneration int64
	done          bool
	forgot        []client.ObjectKey
}

func newFixture(t *testing.T, finalizers ...string) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "example.org", Version: "v1"}
	s.AddKnownTypes(gv, &thing{}, &thingList{})
	metav1.AddToGroupVersion(s, gv)
	// Each test's object is another object, as the API server's are: the
	// fake client starts every one at the same resourceVersion.
	obj := &thing{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Generation: 3, Finalizers: finalizers,
		UID: types.UID(t.Name())}}
	return &fixture{
		c:        fake.NewClientBuilder().WithScheme(s).WithObjects(obj).WithStatusSubresource(obj).Build(),
		recorder: events.NewFakeRecorder(10),
	}
}

func (f *fixture) steps() Steps[*thing, string] {
	return Steps[*thing, string]{
		Client: f.c, Recorder: f.recorder, Told: &f.told,
		Forget: func(k client.ObjectKey) { f.forgot = append(f.forgot, k) },
		Normal: func(_ context.Context, obj *thing) (string, ctrl.Result, error) {
			f.normals++
			f.sawGeneration = obj.Status.ObservedGeneration
			return "observed", f.result, f.err
		},
		Summarize: func(obj *thing, observed string, err error) {
			obj.Status.Note = observed
			reason, msg, blocked, _ := conditions.Reported(err)
			status := metav1.ConditionFalse
			if blocked {
				status = metav1.ConditionTrue
			}
			conditions.Set(&obj.Status.Conditions, obj.Generation, conditions.Degraded, status, "R"+reason, "%s", msg)
			conditions.Set(&obj.Status.Conditions, obj.Generation, conditions.Ready, metav1.ConditionTrue, "Serving", "the last spec serves")
		},
		Deletion: &Deletion[*thing, string]{
			Finalizer: finalizer,
			Run: func(context.Context, *thing) (string, bool, error) {
				return "deleting", f.done, f.err
			},
			Summarize: func(obj *thing, observed string, err error) {
				obj.Status.Note = observed
			},
		},
	}
}

func (f *fixture) run(t *testing.T, s Steps[*thing, string]) (ctrl.Result, error) {
	t.Helper()
	return Run(context.Background(), ctrl.Request{NamespacedName: key}, s)
}

func (f *fixture) stored(t *testing.T) *thing {
	t.Helper()
	got := &thing{}
	if err := f.c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *fixture) events() int {
	n := 0
	for {
		select {
		case <-f.recorder.Events:
			n++
		default:
			return n
		}
	}
}

func TestFirstPassAddsTheFinalizerOnly(t *testing.T) {
	f := newFixture(t)
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t); !controllerutil.ContainsFinalizer(got, finalizer) || f.normals != 0 {
		t.Fatalf("finalizers %v, Normal ran %d times; want the finalizer and no Normal pass", got.Finalizers, f.normals)
	}
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	got := f.stored(t)
	if f.normals != 1 || got.Status.ObservedGeneration != 3 || got.Status.Note != "observed" {
		t.Errorf("after the second pass: %d Normal passes, status %+v; want 1, generation 3 and Summarize's note", f.normals, got.Status)
	}
	if f.sawGeneration != 0 {
		t.Errorf("Normal saw observedGeneration %d, want the previous pass's (0)", f.sawGeneration)
	}
}

func TestBlockedIsReportedOnceAndNotRetried(t *testing.T) {
	f := newFixture(t, finalizer)
	f.result = ctrl.Result{RequeueAfter: time.Minute}
	f.err = fmt.Errorf("pass: %w", conditions.Block("SecretNotFound", "create Secret s"))
	for range 2 {
		res, err := f.run(t, f.steps())
		if err != nil || res.RequeueAfter != time.Minute {
			t.Fatalf("blocked pass: %+v, %v; want Normal's result and no error", res, err)
		}
	}
	d := meta.FindStatusCondition(f.stored(t).Status.Conditions, conditions.Degraded)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != "RSecretNotFound" {
		t.Errorf("Degraded = %+v, want True for RSecretNotFound", d)
	}
	if n := f.events(); n != 1 {
		t.Errorf("%d Warning events for one problem over two passes, want 1", n)
	}
}

// A child the API server refuses is reported as Degraded with the server's
// message, told once, looked at again after RefusedRecheck rather than
// retried at once, and the spec it came from is not marked observed.
func TestRefusedChildIsDegradedAndNotObserved(t *testing.T) {
	f := newFixture(t, finalizer)
	pods := schema.GroupResource{Resource: "pods"}
	f.err = fmt.Errorf("creating a pod: %w", apierrors.NewForbidden(pods, "p", errors.New(`violates PodSecurity "restricted:latest"`)))
	for range 2 {
		res, err := f.run(t, f.steps())
		if err != nil || res.RequeueAfter != conditions.RefusedRecheck {
			t.Fatalf("refused pass: %+v, %v; want a recheck after %v and no error", res, err, conditions.RefusedRecheck)
		}
	}
	got := f.stored(t)
	d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != "R"+conditions.ReasonRefused || !strings.Contains(d.Message, "violates PodSecurity") {
		t.Errorf("Degraded = %+v, want True for R%s with the server's message", d, conditions.ReasonRefused)
	}
	if got.Status.ObservedGeneration != 0 {
		t.Errorf("observedGeneration %d after a refused pass, want 0: generation 3 was not carried out", got.Status.ObservedGeneration)
	}
	// kubectl wait --for=condition=Ready compares the condition's
	// observedGeneration with the spec's: Ready describes generation 0,
	// Degraded this one.
	if r := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready); r == nil || r.ObservedGeneration != 0 {
		t.Errorf("Ready %+v after a refused pass: want it stamped with the last generation carried out (0)", r)
	}
	if d.ObservedGeneration != 3 {
		t.Errorf("Degraded stamped %d, want 3: it is about the refused spec", d.ObservedGeneration)
	}
	if n := f.events(); n != 1 {
		t.Errorf("%d Warning events for one refusal over two passes, want 1", n)
	}
	// Once the cause is gone, the pass observes the generation.
	f.err = nil
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	got = f.stored(t)
	if g := got.Status.ObservedGeneration; g != 3 {
		t.Errorf("observedGeneration %d after a pass that succeeded, want 3", g)
	}
	if r := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready); r == nil || r.ObservedGeneration != 3 {
		t.Errorf("Ready %+v after a pass that succeeded: want it stamped 3", r)
	}
}

// A pass that waits for the work carrying out the spec (a Job changing a
// password, conditions.Carrying) does not observe its generation: Ready,
// true for the server that serves, still describes the last spec carried
// out, so `kubectl wait --for=condition=Ready` does not pass before the
// work is done; a plain Wait (a pod starting) observes it.
func TestCarryingWorkDoesNotObserveTheSpec(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int64
	}{
		{"carrying", conditions.Carrying("Changing", "password-job runs"), 0},
		{"waiting", conditions.Wait("Starting", "a pod starts"), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, finalizer)
			f.err = c.err
			if _, err := f.run(t, f.steps()); err != nil {
				t.Fatal(err)
			}
			got := f.stored(t)
			r := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready)
			if got.Status.ObservedGeneration != c.want || r == nil || r.ObservedGeneration != c.want {
				t.Errorf("observedGeneration %d, Ready %+v: want both at %d", got.Status.ObservedGeneration, r, c.want)
			}
		})
	}
}

// A stranger's object in a child's place is outside the cache: the pass
// looks again, sooner than Normal asked.
func TestNameConflictIsRechecked(t *testing.T) {
	f := newFixture(t, finalizer)
	f.result = ctrl.Result{RequeueAfter: time.Minute}
	f.err = fmt.Errorf("pass: %w", conditions.NameConflict("Pod", "p", "Database", "p"))
	res, err := f.run(t, f.steps())
	if err != nil || res.RequeueAfter != conditions.NameConflictRecheck {
		t.Errorf("blocked pass: %+v, %v; want a recheck after %v and no error", res, err, conditions.NameConflictRecheck)
	}
}

func TestFailuresAreRetriedWithoutTheirResult(t *testing.T) {
	f := newFixture(t, finalizer)
	f.result = ctrl.Result{RequeueAfter: time.Minute}
	f.err = errors.New("connection refused")
	res, err := f.run(t, f.steps())
	if !errors.Is(err, f.err) || res != (ctrl.Result{}) {
		t.Errorf("failed pass: %+v, %v; want the error alone", res, err)
	}
}

func TestManagesAndForget(t *testing.T) {
	f := newFixture(t, finalizer)
	s := f.steps()
	s.Manages = func(client.Object) bool { return false }
	if _, err := f.run(t, s); err != nil || f.normals != 0 {
		t.Errorf("another operator's object: %d Normal passes, err %v; want none", f.normals, err)
	}
	if err := f.c.Delete(context.Background(), f.stored(t)); err != nil {
		t.Fatal(err)
	}
	s = f.steps()
	s.Deletion = nil
	if _, err := f.run(t, s); err != nil || f.normals != 0 || len(f.forgot) != 0 {
		t.Fatalf("being deleted without a finalizer of ours: Normal %d, forgot %v, err %v; want nothing done", f.normals, f.forgot, err)
	}
}

func TestDeletionWaitsForFinalize(t *testing.T) {
	f := newFixture(t, finalizer)
	if err := f.c.Delete(context.Background(), f.stored(t)); err != nil {
		t.Fatal(err)
	}
	f.err = conditions.Wait("BackingUp", "backup-job runs")
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	got := f.stored(t)
	if !controllerutil.ContainsFinalizer(got, finalizer) || got.Status.Note != "deleting" || f.normals != 0 {
		t.Fatalf("while Finalize waits: finalizers %v, note %q, %d Normal passes; want the finalizer kept and the deletion summarized",
			got.Finalizers, got.Status.Note, f.normals)
	}
	f.err, f.done = nil, true
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	if len(f.forgot) != 1 || f.forgot[0] != key {
		t.Errorf("once Finalize is done the object goes and is forgotten: forgot %v", f.forgot)
	}
}

// Told forgets an object once it is gone: an operator that lives long does
// not keep a reason for every object it ever saw, and a new object of the
// same name (here with the same empty UID the fake API server gives every
// object) has its problem told again.
func TestToldForgetsWhatIsGone(t *testing.T) {
	f := newFixture(t)
	s := f.steps()
	s.Deletion = nil
	f.err = conditions.Block("Stuck", "a person must act")
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	obj := f.stored(t)
	if err := f.c.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	again := &thing{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Generation: 1}}
	if err := f.c.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	if n := len(f.recorder.Events); n != 2 {
		t.Errorf("%d Warning events for the two objects' problems, want 2 (one each)", n)
	}
}

// A pass that created children writes no status: their events bring the
// object back, and that pass reports what they look like. A pass that
// failed reports as any other.
func TestSettlingPassWritesNoStatus(t *testing.T) {
	f := newFixture(t, finalizer)
	s := f.steps()
	s.Settling = func(observed string) bool { return observed == "observed" }
	f.result = ctrl.Result{RequeueAfter: time.Minute}
	res, err := f.run(t, s)
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("settling pass: %+v, %v; want Normal's result", res, err)
	}
	if got := f.stored(t); got.Status.Note != "" || got.Status.ObservedGeneration != 0 || f.normals != 1 {
		t.Fatalf("after a settling pass: status %+v, %d Normal passes; want no status written", got.Status, f.normals)
	}
	f.err = fmt.Errorf("pass: %w", conditions.Block("SecretNotFound", "create Secret s"))
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t); got.Status.Note != "observed" || got.Status.ObservedGeneration != 3 {
		t.Errorf("a blocked pass that may settle: status %+v; want it written", got.Status)
	}
}

// staleCache answers Get with the copy it was given, as a cache that has
// not seen the last write yet does, and writes through to the fake API
// server.
type staleCache struct {
	client.Client
	copy *thing
}

func (c staleCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	*obj.(*thing) = *c.copy.DeepCopyObject().(*thing)
	return nil
}

func TestPassOnTheCopyAWriteReplacedSkips(t *testing.T) {
	f := newFixture(t, finalizer)
	before := f.stored(t)
	if _, err := f.run(t, f.steps()); err != nil {
		t.Fatal(err)
	}
	written := f.stored(t)
	if written.ResourceVersion == before.ResourceVersion || f.normals != 1 {
		t.Fatalf("the first pass wrote nothing (resourceVersion %s, %d Normal passes)", written.ResourceVersion, f.normals)
	}

	// A child's event brings the object back before the cache has seen
	// the status write: the pass reads the copy from before it.
	s := f.steps()
	s.Client = staleCache{Client: f.c, copy: before}
	if _, err := f.run(t, s); err != nil {
		t.Fatalf("a pass on the replaced copy: %v; want it skipped, not a conflict", err)
	}
	if f.normals != 1 {
		t.Fatalf("Normal ran on the copy the status write replaced (%d passes)", f.normals)
	}
	if got := f.stored(t); got.ResourceVersion != written.ResourceVersion {
		t.Fatalf("the skipped pass wrote (resourceVersion %s, want %s)", got.ResourceVersion, written.ResourceVersion)
	}

	// The write's own event: the cache holds it, and the pass runs.
	s.Client = staleCache{Client: f.c, copy: written}
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	if f.normals != 2 {
		t.Fatalf("Normal did not run on the written copy (%d passes)", f.normals)
	}

	// Another object made under the same name, at the same
	// resourceVersion (another API server's): not a stale copy.
	other := before.DeepCopyObject().(*thing)
	other.UID = "another"
	s.Client = staleCache{Client: f.c, copy: other}
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	if f.normals != 3 {
		t.Fatalf("Normal did not run on another object of the same name (%d passes)", f.normals)
	}
}

// A pass that meets a child this process created and the cache does not
// show yet (apply.Unseen) ends there: no status written, no error to
// retry, and a requeue for when the memory of the creation ends, should
// the child's event never come; the same in a deletion's step.
func TestUnseenChildEndsThePass(t *testing.T) {
	f := newFixture(t, finalizer)
	s := f.steps()
	f.err = fmt.Errorf("reading the Service: %w", &apply.Unseen{Kind: "Service", Key: key, After: 20 * time.Second})
	res, err := f.run(t, s)
	if err != nil || res.RequeueAfter != 20*time.Second {
		t.Fatalf("pass: %+v, %v; want no error and a requeue after 20s", res, err)
	}
	if got := f.stored(t); got.Status.Note != "" || got.Status.ObservedGeneration != 0 || f.normals != 1 {
		t.Fatalf("after the pass: status %+v, %d Normal passes; want no status written", got.Status, f.normals)
	}
	if err := f.c.Delete(context.Background(), f.stored(t)); err != nil {
		t.Fatal(err)
	}
	res, err = f.run(t, s)
	if got := f.stored(t); err != nil || res.RequeueAfter != 20*time.Second || got.Status.Note != "" {
		t.Errorf("deletion's pass: %+v, %v, status %+v; want a requeue after 20s and no status written", res, err, got.Status)
	}
}

// Once this process took its finalizer off, the object goes: a pass on any
// copy of it the cache still delivers (here the one its last status write
// made, which the deletion's event has not followed yet) finalizes nothing
// again: Finalize would start work, Jobs say, for an object already gone.
func TestPassOnAReleasedObjectSkips(t *testing.T) {
	f := newFixture(t, finalizer, "example.org/another")
	if err := f.c.Delete(context.Background(), f.stored(t)); err != nil {
		t.Fatal(err)
	}
	finalizes := 0
	s := f.steps()
	s.Deletion.Run = func(context.Context, *thing) (string, bool, error) {
		finalizes++
		return "deleting", true, nil
	}
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	got := f.stored(t)
	if controllerutil.ContainsFinalizer(got, finalizer) || finalizes != 1 {
		t.Fatalf("after a done Finalize: finalizers %v, %d Finalize calls", got.Finalizers, finalizes)
	}
	// The copy the cache delivers next: the pass's status write, with the
	// finalizer still on (written by the pass before it released it).
	afterStatus := got.DeepCopyObject().(*thing)
	afterStatus.Finalizers = append(afterStatus.Finalizers, finalizer)
	afterStatus.ResourceVersion = "written-between"
	s.Client = staleCache{Client: f.c, copy: afterStatus}
	if _, err := f.run(t, s); err != nil {
		t.Fatal(err)
	}
	if finalizes != 1 {
		t.Errorf("Finalize ran again on a copy of an object whose finalizer this process released (%d calls)", finalizes)
	}
	// Another object made under the same name is finalized as usual.
	other := afterStatus.DeepCopyObject().(*thing)
	other.UID = "another"
	s.Client = staleCache{Client: f.c, copy: other}
	if _, err := f.run(t, s); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if finalizes != 2 {
		t.Errorf("Finalize did not run on another object of the same name (%d calls)", finalizes)
	}
}

// A deletion pass whose status write finds the object changed since it was
// read (a conflict) or gone ends without an error: the change's own event,
// or none for an object gone, brings the next pass, on fresh data, with no
// retry after a back-off.
func TestDeletionPassWhoseWriteIsStaleEndsQuietly(t *testing.T) {
	for name, refusal := range map[string]error{
		"conflict": apierrors.NewConflict(schema.GroupResource{Group: "example.org", Resource: "things"}, key.Name, errors.New("changed")),
		"gone":     apierrors.NewNotFound(schema.GroupResource{Group: "example.org", Resource: "things"}, key.Name),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, finalizer)
			if err := f.c.Delete(context.Background(), f.stored(t)); err != nil {
				t.Fatal(err)
			}
			f.c = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
				SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
					return refusal
				},
			})
			f.err = conditions.Wait("BackingUp", "backup-job runs")
			if _, err := f.run(t, f.steps()); err != nil {
				t.Errorf("the pass ended with %v, want no error", err)
			}
		})
	}
}
