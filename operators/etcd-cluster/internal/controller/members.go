package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/reconciler"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// observed is what the API server holds of a cluster's members: pods and
// volumes by member name.
type observed struct {
	pods    map[string]*corev1.Pod
	volumes map[string]*corev1.PersistentVolumeClaim
}

// names are the member names that have a pod or a volume, in ordinal order.
func (o observed) names(cluster string) []string {
	var out []string
	for n := range o.pods {
		out = append(out, n)
	}
	for n := range o.volumes {
		if o.pods[n] == nil {
			out = append(out, n)
		}
	}
	sortByOrdinal(cluster, out)
	return out
}

func sortByOrdinal(cluster string, names []string) {
	sort.Slice(names, func(i, j int) bool {
		a, _ := membership.Ordinal(cluster, names[i])
		b, _ := membership.Ordinal(cluster, names[j])
		return a < b
	})
}

func (r *EtcdClusterReconciler) observe(ctx context.Context, c *etcdv1.EtcdCluster) (observed, error) {
	o := observed{pods: map[string]*corev1.Pod{}, volumes: map[string]*corev1.PersistentVolumeClaim{}}
	var list corev1.PodList
	if err := r.List(ctx, &list, manager.ControlledBy(c)); err != nil {
		return o, err
	}
	for i := range list.Items {
		o.pods[list.Items[i].Name] = &list.Items[i]
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs, manager.ControlledBy(c)); err != nil {
		return o, err
	}
	for i := range pvcs.Items {
		v := &pvcs.Items[i]
		o.volumes[strings.TrimPrefix(v.Name, volumeName(""))] = v
	}
	return o, nil
}

// served reports whether cluster c has served once: its peer Service
// carries the mark (marked), or a volume of its carries the ID of a member
// etcd listed (which clusters that served before the mark existed have).
// It returns the peer Service, when it is c's, for markServed.
func (r *EtcdClusterReconciler) served(ctx context.Context, c *etcdv1.EtcdCluster, obs observed) (served, marked bool, peer *corev1.Service, err error) {
	peer = &corev1.Service{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, peer); {
	case apierrors.IsNotFound(err) || err == nil && !metav1.IsControlledBy(peer, c):
		peer = nil
	case err != nil:
		return false, false, nil, err
	}
	marked = peer != nil && peer.Annotations[servedAnnotation] == "true"
	for _, v := range obs.volumes {
		if v.Labels[memberIDLabel] != "" {
			return true, marked, peer, nil
		}
	}
	return marked, marked, peer, nil
}

// markServed marks the peer Service of a cluster whose members answer
// with a quorum (servedAnnotation), once. A merge patch, not the Service's
// apply: the applies of later passes leave the mark alone.
func (r *EtcdClusterReconciler) markServed(ctx context.Context, c *etcdv1.EtcdCluster, peer *corev1.Service) error {
	patch := client.MergeFrom(peer.DeepCopy())
	if peer.Annotations == nil {
		peer.Annotations = map[string]string{}
	}
	peer.Annotations[servedAnnotation] = "true"
	if err := r.Patch(ctx, peer, patch); err != nil {
		return fmt.Errorf("mark Service %s as the Service of a cluster that served: %w", peer.Name, err)
	}
	r.Recorder.Eventf(c, peer, corev1.EventTypeNormal, "Served", "MarkServed",
		"the members answer with a quorum: from now on the cluster is never started empty again")
	return nil
}

// reconcileMembers reads the members from etcd, plans one step and takes it:
// a cluster with no member yet is bootstrapped, one whose members do not
// answer gets its pods back, and one that answers is tidied (orphans
// deleted, deleted pods restored) before the step.
func (r *EtcdClusterReconciler) reconcileMembers(ctx context.Context, c *etcdv1.EtcdCluster, p *pass) (ctrl.Result, error) {
	obs, err := r.observe(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.obs = obs
	served, marked, peer, err := r.served(ctx, c, obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.served = served
	opts, err := membership.OptionsFor(c.Name, c.Spec.Version, runningVersions(c, obs)...)
	if err != nil {
		p.invalid = err
		return ctrl.Result{}, nil
	}
	if len(obs.pods) == 0 && len(obs.volumes) == 0 {
		if served {
			p.lost = true
			return ctrl.Result{}, nil
		}
		if c.Spec.Paused {
			return ctrl.Result{}, nil
		}
		return r.bootstrap(ctx, c, p)
	}

	exec, addr := r.executor(c), HeadlessService(c)
	exec.Endpoints, exec.Signs = nil, nil
	for _, name := range obs.names(c.Name) {
		exec.Endpoints = append(exec.Endpoints, addr.ClientURL(name))
		// A member pod's readiness probe asks the member itself (/health):
		// one found ready answers now, whatever the last probe saw.
		if p := obs.pods[name]; p != nil && pods.Ready(p) {
			exec.Signs = append(exec.Signs, name)
		}
	}
	members, err := exec.Members(ctx)
	if err != nil {
		return r.unanswered(ctx, c, p, err)
	}
	if c.Spec.Paused {
		markFailed(members, obs)
		p.plan(c, members, opts)
		return ctrl.Result{}, nil
	}
	if res, replaced, err := r.replaceNeverRan(ctx, c, obs, members); replaced || err != nil {
		return res, err
	}
	if err := r.plan(ctx, c, members, p, opts); err != nil {
		return ctrl.Result{}, err
	}
	if !marked && peer != nil && membership.Availability(members).Available() {
		if err := r.markServed(ctx, c, peer); err != nil {
			return ctrl.Result{}, err
		}
		p.served = true
	}
	if deleted, err := r.tidy(ctx, c, members, exec.Current(), obs, p.step); err != nil || deleted {
		return after(requeueSoon, err)
	}
	return r.take(ctx, c, exec, opts, p)
}

// unanswered is the pass of a cluster none of whose members answers.
func (r *EtcdClusterReconciler) unanswered(ctx context.Context, c *etcdv1.EtcdCluster, p *pass, err error) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("no member answers", "error", err.Error())
	p.unanswered = err
	obs := p.obs
	switch {
	case c.Spec.Paused && !p.served:
		p.bootstrap = bootstrapMembers(c, obs)
		return ctrl.Result{}, nil
	case c.Spec.Paused:
		return ctrl.Result{}, nil
	case !p.served:
		// The first members are still starting: see that they all exist.
		_, err := r.bootstrap(ctx, c, p)
		return after(requeueUnreachable, err)
	}
	// Members whose pods were deleted come back on their volumes; with no
	// member answering, that is the only way back.
	return after(requeueUnreachable, r.restorePods(ctx, c, obs, obs.names(c.Name), nil))
}

// plan marks the members whose pods failed, labels the volumes with their
// member IDs and plans the next step, noting both in p.
func (r *EtcdClusterReconciler) plan(ctx context.Context, c *etcdv1.EtcdCluster, members []membership.Member, p *pass, opts membership.Options) error {
	markFailed(members, p.obs)
	if err := r.labelVolumes(ctx, members, p.obs); err != nil {
		return err
	}
	p.plan(c, members, opts)
	ctrl.LoggerFrom(ctx).V(1).Info("planned", "step", p.step.String())
	return nil
}

// tidy deletes the pods and volumes of members etcd no longer lists, and
// reports whether it deleted any; else it restores the pods of started
// members that were deleted, but for the member the step removes. Only a
// current list (read through raft from the leader, see
// membership.Executor.Current) of an available cluster tells what etcd no
// longer lists: a follower's copy may lag by a member just added, whose
// volume would go.
func (r *EtcdClusterReconciler) tidy(ctx context.Context, c *etcdv1.EtcdCluster, members []membership.Member, current bool, obs observed, step membership.Step) (bool, error) {
	if current && membership.Availability(members).Available() {
		if deleted, err := r.deleteOrphans(ctx, c, members, obs); err != nil || deleted {
			return deleted, err
		}
	}
	var restore []string
	for _, m := range members {
		removing := step.Action == membership.Remove && step.Member.ID == m.ID
		if m.Started() && !m.Failed && !removing {
			restore = append(restore, m.Name)
		}
	}
	return false, r.restorePods(ctx, c, obs, restore, members)
}

// take takes the step p planned.
func (r *EtcdClusterReconciler) take(ctx context.Context, c *etcdv1.EtcdCluster, exec *membership.Executor, opts membership.Options, p *pass) (ctrl.Result, error) {
	step, obs := p.step, p.obs
	switch step.Action {
	case membership.None:
		return r.roll(ctx, c, exec, opts, p)
	case membership.Wait:
		return reconciler.Poll(requeueSoon), nil
	case membership.Blocked:
		// A person is needed: Degraded says so, with one Warning per
		// cause (reconciler.Run tells it).
		return reconciler.Poll(requeueUnreachable), nil
	case membership.Start:
		return r.start(ctx, c, obs, step)
	}

	log := ctrl.LoggerFrom(ctx)
	res, err := exec.Apply(ctx, step)
	if err != nil {
		return ctrl.Result{}, r.refused(c, step, err)
	}
	if res.Retry {
		log.Info("etcd refused the step for now", "step", step.String(), "detail", res.Detail)
		return reconciler.Poll(requeueSoon), nil
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, string(step.Action), string(step.Action), "%s: %s", res.Detail, step.Reason)
	log.Info("membership changed", "step", step.String(), "detail", res.Detail)
	if step.Action == membership.Remove {
		// A removed member can never rejoin with its data: its pod and
		// volume go. A replacement starts empty under the same name.
		if err := r.deleteMember(ctx, obs, step.Member.Name); err != nil {
			return ctrl.Result{}, err
		}
	}
	return reconciler.Poll(requeueSoon), nil
}

// refused warns that etcd answered step with err, and returns the error
// the pass ends with (stepFailed: Degraded says it).
func (r *EtcdClusterReconciler) refused(c *etcdv1.EtcdCluster, step membership.Step, err error) error {
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, ReasonStepFailed, string(step.Action), "%v", err)
	return &stepFailed{step: step, err: err}
}

// bootstrap creates the first members of a new cluster, all at once with
// --initial-cluster-state=new, as etcd's own static bootstrap does. A
// bootstrap cut short by a restart is completed with the member list the
// first pods were given.
func (r *EtcdClusterReconciler) bootstrap(ctx context.Context, c *etcdv1.EtcdCluster, p *pass) (ctrl.Result, error) {
	obs := p.obs
	names := bootstrapMembers(c, obs)
	how := start{initialCluster: initialCluster(HeadlessService(c), names)}
	var created []string
	for _, n := range names {
		did, err := r.ensureMember(ctx, c, obs, n, 0, how)
		if err != nil {
			return ctrl.Result{}, err
		}
		if did {
			created = append(created, n)
		}
	}
	if len(created) > 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Bootstrap", "CreateMembers",
			"created %s of a new %d-member cluster", strings.Join(created, ", "), len(names))
	}
	p.bootstrap = names
	return reconciler.Poll(requeueSoon), nil
}

// initialCluster is the --initial-cluster of members names, at the peer URLs
// addr gives them.
func initialCluster(addr Addressing, names []string) string {
	ms := make([]membership.Member, len(names))
	for i, n := range names {
		ms[i] = membership.Member{Name: n, PeerURLs: []string{addr.PeerURL(n)}}
	}
	return membership.InitialCluster(ms)
}

// bootstrapMembers are the names in the --initial-cluster of the first pods,
// or, before there is any, spec.size new names.
func bootstrapMembers(c *etcdv1.EtcdCluster, obs observed) []string {
	for _, p := range obs.pods {
		for _, a := range p.Spec.Containers[0].Args {
			if list, ok := strings.CutPrefix(a, "--initial-cluster="); ok && list != "" {
				var names []string
				for _, kv := range strings.Split(list, ",") {
					name, _, _ := strings.Cut(kv, "=")
					names = append(names, name)
				}
				return names
			}
		}
	}
	names := make([]string, c.Spec.Size)
	for i := range names {
		names[i] = membership.MemberName(c.Name, i)
	}
	return names
}

// ensureMember creates the volume and the pod of member name where they are
// missing. It reports whether it created the pod.
func (r *EtcdClusterReconciler) ensureMember(ctx context.Context, c *etcdv1.EtcdCluster, obs observed, name string, id uint64, how start) (bool, error) {
	if v := obs.volumes[name]; v != nil && !v.DeletionTimestamp.IsZero() {
		return false, nil // a pod would not start on it: wait until it is gone
	}
	if obs.volumes[name] == nil {
		if _, err := r.create(ctx, c, volumeFor(c, name, id), &corev1.PersistentVolumeClaim{}); err != nil {
			return false, fmt.Errorf("create the volume of %s: %w", name, err)
		}
	}
	if p := obs.pods[name]; p != nil {
		if !pods.Ended(p) || !p.DeletionTimestamp.IsZero() {
			return false, nil
		}
		// A pod that ended does not restart: replace it, on its volume.
		if err := r.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return false, err
		}
		return false, nil // its deletion brings the cluster back here
	}
	created, err := r.create(ctx, c, podFor(c, name, how, r.Requests), &corev1.Pod{})
	if err != nil {
		return false, fmt.Errorf("create the pod of %s: %w", name, err)
	}
	return created, nil
}

// create creates obj, a child of c that c controls, unless an object of
// its name exists (apply.CreateOwned: the cache had not seen it yet, or it
// is a stranger's, a NameConflict). It reports whether it created obj.
func (r *EtcdClusterReconciler) create(ctx context.Context, c *etcdv1.EtcdCluster, obj, existing client.Object) (bool, error) {
	if err := controllerutil.SetControllerReference(c, obj, r.Scheme()); err != nil {
		return false, err
	}
	return owner.CreateOwned(ctx, r.Client, r.APIReader, c, obj, existing, apply.ControlledBy(c))
}

// restorePods recreates the pods of members whose pod is gone but whose
// volume is there: etcd starts on its data directory as the same member, and
// ignores the start flags.
func (r *EtcdClusterReconciler) restorePods(ctx context.Context, c *etcdv1.EtcdCluster, obs observed, names []string, members []membership.Member) error {
	how := start{initialCluster: membership.InitialCluster(members), existing: true}
	if len(members) == 0 {
		how.initialCluster = initialCluster(HeadlessService(c), obs.names(c.Name))
	}
	var restored []string
	for _, n := range names {
		if obs.volumes[n] == nil {
			continue
		}
		did, err := r.ensureMember(ctx, c, obs, n, 0, how)
		if err != nil {
			return err
		}
		if did {
			restored = append(restored, n)
		}
	}
	if len(restored) > 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Restarted", "CreatePod",
			"recreated the pods of %s on their volumes", strings.Join(restored, ", "))
	}
	return nil
}

// markFailed marks the started members whose data is gone: no volume, or a
// volume that holds another member's data. Only those are replaced.
func markFailed(members []membership.Member, obs observed) {
	for i, m := range members {
		if !m.Started() {
			continue
		}
		v := obs.volumes[m.Name]
		if v == nil || !v.DeletionTimestamp.IsZero() ||
			(v.Labels[memberIDLabel] != "" && v.Labels[memberIDLabel] != memberID(m.ID)) {
			members[i].Failed = true
		}
	}
}

// labelVolumes records on each started member's volume the member ID whose
// data it holds, so that a volume left from a removed member is told apart
// from the new member of the same name.
func (r *EtcdClusterReconciler) labelVolumes(ctx context.Context, members []membership.Member, obs observed) error {
	for _, m := range members {
		v := obs.volumes[m.Name]
		if !m.Started() || !m.Healthy || v == nil || v.Labels[memberIDLabel] != "" {
			continue
		}
		patch := client.MergeFrom(v.DeepCopy())
		v.Labels[memberIDLabel] = memberID(m.ID)
		if err := r.Patch(ctx, v, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("label the volume of %s: %w", m.Name, err)
		}
	}
	return nil
}

// deleteOrphans deletes the pods and volumes of names etcd does not list: a
// member removed by an operator that stopped before it deleted them. It
// reports whether it deleted anything.
func (r *EtcdClusterReconciler) deleteOrphans(ctx context.Context, c *etcdv1.EtcdCluster, members []membership.Member, obs observed) (bool, error) {
	var orphans []string
	for _, n := range obs.names(c.Name) {
		if !slices.ContainsFunc(members, func(m membership.Member) bool { return m.Name == n }) {
			orphans = append(orphans, n)
		}
	}
	for _, n := range orphans {
		if err := r.deleteMember(ctx, obs, n); err != nil {
			return false, err
		}
	}
	if len(orphans) > 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Cleanup", "DeleteMembers",
			"deleted the pods and volumes of %s: etcd no longer lists them", strings.Join(orphans, ", "))
	}
	return len(orphans) > 0, nil
}

func (r *EtcdClusterReconciler) deleteMember(ctx context.Context, obs observed, name string) error {
	var errs []error
	if p := obs.pods[name]; p != nil {
		errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, p)))
	}
	if v := obs.volumes[name]; v != nil {
		errs = append(errs, client.IgnoreNotFound(r.Delete(ctx, v)))
	}
	return errors.Join(errs...)
}

// start carries out a Start step: the volume (emptied first if it holds a
// removed member's data) and the pod of a member etcd has added.
func (r *EtcdClusterReconciler) start(ctx context.Context, c *etcdv1.EtcdCluster, obs observed, step membership.Step) (ctrl.Result, error) {
	name, id := step.Member.Name, step.Member.ID
	if v := obs.volumes[name]; v != nil {
		switch got := v.Labels[memberIDLabel]; got {
		case memberID(id):
		case "":
			patch := client.MergeFrom(v.DeepCopy())
			v.Labels[memberIDLabel] = memberID(id)
			if err := r.Patch(ctx, v, patch); err != nil {
				return ctrl.Result{}, fmt.Errorf("label the volume of %s: %w", name, err)
			}
		default:
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Cleanup", "DeleteVolume",
				"the volume of %s holds the data of removed member %s: deleted before %s (%s) starts", name, got, name, memberID(id))
			return after(requeueSoon, r.deleteMember(ctx, obs, name))
		}
	}
	did, err := r.ensureMember(ctx, c, obs, name, id, start{initialCluster: step.InitialCluster, existing: true})
	if err != nil {
		return ctrl.Result{}, err
	}
	if did {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Start", "CreatePod", "started %s (%s) to join the cluster", name, memberID(id))
	}
	return reconciler.Poll(requeueSoon), nil
}

// admitted asks the API server whether it would create member name's new
// pod, before its running one is deleted for it: a refused pod would leave
// the member out.
func (r *EtcdClusterReconciler) admitted(ctx context.Context, c *etcdv1.EtcdCluster, members []membership.Member, name string) error {
	how := start{initialCluster: membership.InitialCluster(members), existing: true}
	return pods.Admitted(ctx, r.Client, c.Namespace, name+"-", podFor(c, name, how, r.Requests))
}

// replaceNeverRan replaces a member's pod that waits for an image its node
// cannot get (a version never released, a mistyped repository), once the
// spec names another image (the version taken back), and says whether it
// did. Such a pod runs nothing: it goes at once, without the roll's wait for
// every member to be ready, which it never would be, and comes back on its
// volume with the spec's image, when that is a step etcd can take.
func (r *EtcdClusterReconciler) replaceNeverRan(ctx context.Context, c *etcdv1.EtcdCluster, obs observed, members []membership.Member) (ctrl.Result, bool, error) {
	for _, name := range obs.names(c.Name) {
		p := obs.pods[name]
		if p == nil || !p.DeletionTimestamp.IsZero() || p.Spec.Containers[0].Image == Image(c) || !pods.NeverRan(p) {
			continue
		}
		if err := versionStep(c, obs); err != nil {
			return ctrl.Result{}, false, err
		}
		if err := r.admitted(ctx, c, members, name); err != nil {
			return ctrl.Result{}, false, err
		}
		if err := r.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, false, err
		}
		r.Recorder.Eventf(c, p, corev1.EventTypeNormal, "Upgrade", "DeletePod", "%s restarts with %s: its image %s never pulled", name, Image(c), p.Spec.Containers[0].Image)
		return reconciler.Poll(requeueSoon), true, nil
	}
	return ctrl.Result{}, false, nil
}

// versionStep returns a Blocked error, which leaves observedGeneration
// behind, when spec.version is not a step etcd can take from every version
// the member pods run; a pod that never ran its image runs none.
func versionStep(c *etcdv1.EtcdCluster, obs observed) error {
	if err := membership.UpgradeStep(runningVersions(c, obs), c.Spec.Version); err != nil {
		return &conditions.Blocked{Reason: ReasonVersionStep, Message: err.Error(), Unapplied: true}
	}
	return nil
}

// runningVersions are the etcd versions the member pods run, by their
// images; a pod that never ran its image runs none.
func runningVersions(c *etcdv1.EtcdCluster, obs observed) []string {
	var running []string
	for _, n := range obs.names(c.Name) {
		if p := obs.pods[n]; p != nil && !pods.NeverRan(p) {
			running = append(running, imageVersion(p))
		}
	}
	return running
}

// imageVersion is the etcd version of a member pod's image, its tag
// (repository:v<version>) without the v.
func imageVersion(p *corev1.Pod) string {
	image := p.Spec.Containers[0].Image
	return strings.TrimPrefix(image[strings.LastIndex(image, ":")+1:], "v")
}

// roll moves the members to spec.version one at a time. Only when every
// member is healthy and every pod is ready and not terminating (a deleted
// pod's etcd answers until it has stopped), the pod of one outdated member
// is deleted, after its leadership is handed over, and it comes back on its
// volume with the new image.
func (r *EtcdClusterReconciler) roll(ctx context.Context, c *etcdv1.EtcdCluster, exec *membership.Executor, opts membership.Options, p *pass) (ctrl.Result, error) {
	members, obs := p.members, p.obs
	want := Image(c)
	var outdated []string
	for _, n := range obs.names(c.Name) {
		if p := obs.pods[n]; p != nil && p.Spec.Containers[0].Image != want {
			outdated = append(outdated, n)
		}
	}
	if len(outdated) == 0 {
		return reconciler.Poll(requeueSteady), nil
	}
	if err := versionStep(c, obs); err != nil {
		return ctrl.Result{}, err
	}
	for _, m := range members {
		if p := obs.pods[m.Name]; p == nil || !p.DeletionTimestamp.IsZero() || !pods.Ready(p) {
			return reconciler.Poll(requeueSoon), nil // the last one is still coming back
		}
	}
	victim := outdated[len(outdated)-1]
	if err := r.admitted(ctx, c, members, victim); err != nil {
		return ctrl.Result{}, err
	}
	i := slices.IndexFunc(members, func(m membership.Member) bool { return m.Name == victim })
	if i >= 0 && members[i].IsLeader && opts.MoveLeader {
		to := slices.IndexFunc(members, func(m membership.Member) bool { return m.Name != victim && m.Healthy && !m.IsLearner })
		if to >= 0 {
			step := membership.Step{Action: membership.MoveLeader, Member: members[i], To: members[to]}
			res, err := exec.Apply(ctx, step)
			if err != nil {
				return ctrl.Result{}, r.refused(c, step, err)
			}
			if !res.Retry {
				r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "MoveLeader", "MoveLeader", "%s: %s restarts for the upgrade", res.Detail, victim)
			}
			return reconciler.Poll(requeueSoon), nil
		}
	}
	if err := r.Delete(ctx, obs.pods[victim]); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(c, obs.pods[victim], corev1.EventTypeNormal, "Upgrade", "DeletePod",
		"%s restarts with %s (%d of %d members still to go)", victim, want, len(outdated), len(members))
	p.restarted, p.outdated = victim, len(outdated)
	return reconciler.Poll(requeueSoon), nil
}
