// Package reconciler is the one shape every operator's Reconcile takes, so
// that each operator writes only what is its own:
//
//  1. Get the object; when it is gone, Forget what was remembered of it
//     (the Degraded reasons Told included).
//  2. Leave it alone when another operator Manages it, or when it is the
//     copy this process's last write to it replaced (the cache has not
//     seen the write yet, and the write's event brings it back).
//  3. When it is being deleted: Run its Deletion step, Summarize it, write
//     the status, and release the Finalizer once the step is done. Without
//     a Deletion there is nothing to do: owner references take the
//     children with it.
//  4. Otherwise add the Finalizer, do the Normal work, stamp the generation
//     it observed, and Summarize: Ready, Progressing and Degraded are
//     recomputed from what the pass observed, every pass, so that none
//     stays behind once its cause is gone.
//  5. Tell a person, once per reason, in a Warning event, when Degraded
//     becomes True; write the status only when it changed, and not at all
//     when the pass is Settling: it created children, whose own watch
//     events bring the object back at once, so what it would report is out
//     of date already.
//
// An *apply.Unseen error ends a pass without a status write: a child this
// process created or deleted is not shown so by the cache yet, and its
// event brings the object back.
//
// A *conditions.Blocked or *conditions.Waiting error ends a pass without a
// retry: Summarize reports it, and the watches bring the object back when a
// person or the cluster acts (or, for a cause no watch sees, such as a
// stranger's object in a child's place, the Blocked error's Recheck). Any other error is retried with
// controller-runtime's backoff (and a Result returned with it is dropped,
// since controller-runtime ignores it).
package reconciler

import (
	"context"
	"errors"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/finalizers"
	"github.com/operator-workshops/workshop/operators/common/status"
)

// Object is a custom resource that reports its conditions and the
// generation they describe.
type Object interface {
	client.Object
	// StatusConditions points at status.conditions.
	StatusConditions() *[]metav1.Condition
	// SetObservedGeneration sets status.observedGeneration, and
	// GetObservedGeneration reads it.
	SetObservedGeneration(int64)
	GetObservedGeneration() int64
}

// Steps are what one operator does at each point of the shape, for objects
// of type T (a pointer to a struct); O is what its Normal step observed,
// for its Summarize step. Client, Recorder, Told, Normal and Summarize are
// what every operator gives; the rest are options, nil when unused.
type Steps[T Object, O any] struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Told remembers the Degraded reasons already told; the operator's
	// reconciler holds it, so that it lasts from pass to pass.
	Told *conditions.Told

	// Normal brings obj towards its spec and returns what it observed.
	// It may set any of obj's status; ObservedGeneration is still the one
	// the previous pass observed while it runs.
	Normal func(ctx context.Context, obj T) (O, ctrl.Result, error)
	// Summarize sets the conditions from what Normal observed and the
	// error it ended with, on every pass. For an error that is neither
	// Blocked nor Waiting (a failed API call) it may leave them as they
	// were: that pass is retried.
	Summarize func(obj T, observed O, err error)

	// Forget drops what the operator remembers of an object that no
	// longer exists.
	Forget func(client.ObjectKey)
	// Manages says whether this operator acts on obj at all (the
	// predicate of its watches can be the same function).
	Manages func(obj client.Object) bool
	// Settling says that Normal, which ended without an error, created
	// children whose own watch events bring the object back at once. The
	// pass then writes no status: it would report a step ("the Pod is
	// being created") that the next pass, moments later, reports past,
	// and a status write costs a request on the custom resource's rate
	// limiter, the one that bounds how fast many objects become Ready.
	// Only passes that created a watched child may settle, or the status
	// would never be written.
	Settling func(observed O) bool
	// Deletion is the step of an object being deleted that holds its
	// deletion with a finalizer; without it, owner references take the
	// children with the object.
	Deletion *Deletion[T, O]
}

// Deletion is the work an object's deletion waits for.
type Deletion[T Object, O any] struct {
	// Finalizer is added before the first Normal pass and holds the
	// object's deletion until Run returns done.
	Finalizer string
	// Run runs while obj is being deleted and holds the Finalizer; done
	// lets the deletion finish.
	Run func(ctx context.Context, obj T) (observed O, done bool, err error)
	// Summarize sets the conditions of an object being deleted from what
	// Run observed and the error it ended with.
	Summarize func(obj T, observed O, err error)
}

// newObject returns an empty T to read an object into.
func newObject[T Object]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}

// Run is one pass of the shape for the object req names.
func Run[T Object, O any](ctx context.Context, req ctrl.Request, s Steps[T, O]) (ctrl.Result, error) {
	obj := newObject[T]()
	if err := s.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			apply.ForgetWrites(obj, req.NamespacedName)
			s.Told.Forget(req.NamespacedName)
			if s.Forget != nil {
				s.Forget(req.NamespacedName)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if s.Manages != nil && !s.Manages(obj) {
		return ctrl.Result{}, nil
	}
	if apply.Stale(obj) {
		// The cache has not seen this process's last write yet; that
		// write's watch event brings the object back.
		return ctrl.Result{}, nil
	}
	read := obj.GetResourceVersion()
	defer func() { apply.Wrote(obj, read) }()
	if !obj.GetDeletionTimestamp().IsZero() {
		return s.finalize(ctx, obj)
	}
	if s.Deletion != nil {
		added, err := finalizers.Ensure(ctx, s.Client, obj, s.Deletion.Finalizer)
		if err != nil || added {
			// The patch's own event brings the object back.
			return ctrl.Result{}, ignoreConflict(err)
		}
	}

	before := obj.DeepCopyObject().(T)
	observed, res, err := s.Normal(ctx, obj)
	if err == nil && s.Settling != nil && s.Settling(observed) {
		return res, nil
	}
	if res, ok := unseen(err); ok {
		return res, nil
	}
	// A child the API server refused is a person's to fix (Degraded, with
	// the server's message), not a failure to retry in silence; and the
	// spec it came from was not carried out, so observedGeneration stays
	// at the last one that was, as for any spec that cannot be, or that is
	// still being carried out (conditions.Carrying).
	err = conditions.Refused(err)
	if !conditions.IsUnapplied(err) {
		obj.SetObservedGeneration(obj.GetGeneration())
	}
	s.Summarize(obj, observed, err)
	if conditions.IsUnapplied(err) {
		// `kubectl wait --for=condition=Ready` passes only on a condition
		// whose observedGeneration is the spec's: every condition but
		// Degraded, which is about this spec, describes the last one
		// carried out.
		conditions.Stamp(*obj.StatusConditions(), obj.GetObservedGeneration(), conditions.Degraded)
	}
	s.tell(before, obj)
	if recheck := conditions.Recheck(err); recheck > 0 && (res.RequeueAfter == 0 || recheck < res.RequeueAfter) {
		res = Poll(recheck)
	}
	if err = conditions.Unreported(err); err != nil {
		res = ctrl.Result{}
	}
	return res, status.Finish(ctx, s.Client, before, obj, err)
}

// finalize runs the deletion step of an object that holds the Finalizer.
func (s Steps[T, O]) finalize(ctx context.Context, obj T) (ctrl.Result, error) {
	d := s.Deletion
	if d == nil || !controllerutil.ContainsFinalizer(obj, d.Finalizer) {
		return ctrl.Result{}, nil
	}
	before := obj.DeepCopyObject().(T)
	observed, done, err := d.Run(ctx, obj)
	if res, ok := unseen(err); ok {
		return res, nil
	}
	d.Summarize(obj, observed, err)
	werr := status.PatchIfChanged(ctx, s.Client, before, obj)
	if apierrors.IsNotFound(werr) || apierrors.IsConflict(werr) {
		// Gone already, or changed since read: its event runs the
		// step again on fresh data.
		werr = nil
	}
	if err = errors.Join(conditions.Unreported(err), werr); err != nil || !done {
		return ctrl.Result{}, err
	}
	// NotFound: a pass of an older event released it first.
	err = finalizers.Remove(ctx, s.Client, obj, d.Finalizer)
	if err == nil {
		apply.Released(obj)
	}
	return ctrl.Result{}, client.IgnoreNotFound(ignoreConflict(err))
}

// unseen ends a pass whose step met a child this process created or
// deleted that the cache does not show so yet (apply.Unseen): what the pass would report is
// out of date already, and the child's own event brings the object back
// (or, should it never come, the Result's requeue).
func unseen(err error) (ctrl.Result, bool) {
	var u *apply.Unseen
	if !errors.As(err, &u) {
		return ctrl.Result{}, false
	}
	return ctrl.Result{RequeueAfter: u.After}, true
}

// tell records a Warning event when Degraded became True for a reason not
// told yet: one event per problem, however many passes see it.
func (s Steps[T, O]) tell(before, after T) {
	if d, tell := s.Told.Degraded(after, *before.StatusConditions(), *after.StatusConditions()); tell {
		s.Recorder.Eventf(after, nil, corev1.EventTypeWarning, d.Reason, "Reconcile", "%s", d.Message)
	}
}

// ignoreConflict drops a conflict: the object changed since it was read,
// and that change's event brings it back.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// Poll looks at an object again after d, for what no watch tells (etcd's
// members, a stranger's object that stood in a child's way), behind the
// events waiting: a pass that probes what does not answer takes a worker
// for seconds, and objects polled that way must never starve the others
// (controller-runtime's queue serves higher priorities first, and keeps an
// object's priority when it is requeued).
func Poll(d time.Duration) ctrl.Result {
	return ctrl.Result{RequeueAfter: d, Priority: ptr.To(handler.LowPriority)}
}
