package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/pods"
)

// kubelet plays the nodes of envtest for one namespace: for every member pod
// the operator creates it starts a member of the fake etcd with the pod's
// own flags, on the pod's volume, and marks the pod Ready once the member
// serves (and not Ready while it does not). A volume lives as long as its PersistentVolumeClaim (the fake keys
// it by the claim's UID), so a pod that is deleted comes back with its data
// and a deleted claim takes the data with it, as on a real node.
type kubelet struct {
	t    *testing.T
	c    client.Client
	ns   string
	etcd *fakeEtcd

	mu      sync.Mutex
	members map[string]*member // by pod name
	errs    map[string]string  // the last error starting each pod, logged once
	down    map[string]bool    // pods whose node is down: their members do not run
	missing map[string]bool    // images no registry has: their pods wait in ImagePullBackOff
	late    map[string]bool    // pods whose readiness probe has not run yet
}

// member is the etcd member a pod runs.
type member struct {
	uid       string // of the pod
	clientURL string
	process   *process
}

func startKubelet(t *testing.T, c client.Client, ns string) *kubelet {
	k := &kubelet{t: t, c: c, ns: ns, etcd: etcd, members: map[string]*member{}, errs: map[string]string{}, down: map[string]bool{}, missing: map[string]bool{}, late: map[string]bool{}}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if err := k.sync(context.Background()); err != nil {
				t.Logf("kubelet: %v", err)
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-stopped
		k.mu.Lock()
		defer k.mu.Unlock()
		for name := range k.members {
			k.stop(name)
		}
	})
	return k
}

// sync starts the members of new pods, restarts those that exited (as
// restartPolicy Always does), stops those of deleted pods, marks pods Ready,
// and lets deleted claims go once no pod uses them, taking their data along.
func (k *kubelet) sync(ctx context.Context) error {
	var list corev1.PodList
	if err := k.c.List(ctx, &list, client.InNamespace(k.ns)); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	live := map[string]bool{}
	claimed := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		live[p.Name] = true
		claimed[claimOf(p)] = true
		m := k.members[p.Name]
		if m != nil && (m.uid != string(p.UID) || !k.etcd.runs(m.clientURL, m.process)) {
			k.stop(p.Name) // the pod was replaced, or its etcd exited
			m = nil
		}
		if k.down[p.Name] {
			k.stop(p.Name)
			m = nil
		}
		if image := p.Spec.Containers[0].Image; m == nil && k.missing[image] {
			if err := k.cannotPull(ctx, p); err != nil {
				return err
			}
			continue
		}
		if m == nil && p.DeletionTimestamp.IsZero() && !k.down[p.Name] {
			var err error
			if m, err = k.run(ctx, p); err != nil {
				if err.Error() != k.errs[p.Name] {
					k.errs[p.Name] = err.Error()
					k.t.Logf("kubelet: %s: %v (retrying)", p.Name, err)
				}
				continue
			}
			k.members[p.Name] = m
		}
		// The readiness probe: /health answers while the member sees a leader.
		if serves := m != nil && k.etcd.serves(m.clientURL, m.process); serves != pods.Ready(p) && p.DeletionTimestamp.IsZero() && !k.late[p.Name] {
			if err := k.setReady(ctx, p, serves); err != nil {
				return err
			}
		}
	}
	for name := range k.members {
		if !live[name] {
			k.stop(name)
		}
	}

	var claims corev1.PersistentVolumeClaimList
	if err := k.c.List(ctx, &claims, client.InNamespace(k.ns)); err != nil {
		return err
	}
	for i := range claims.Items {
		v := &claims.Items[i]
		if v.DeletionTimestamp.IsZero() || claimed[v.Name] {
			continue
		}
		// The pvc-protection controller's part, and the provisioner's.
		k.etcd.dropVolume(string(v.UID))
		patch := client.MergeFrom(v.DeepCopy())
		v.Finalizers = nil
		if err := k.c.Patch(ctx, v, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// nodeDown stops the members of pods names and keeps them stopped, as a
// node that went away would, pods and volumes left in place; nodeUp lets
// them run again on their data.
func (k *kubelet) nodeDown(names ...string) { k.set(k.down, true, names) }

func (k *kubelet) nodeUp(names ...string) { k.set(k.down, false, names) }

// probeLate holds back the readiness probes of pods names, as the seconds
// between a member's start and the kubelet's first probe do; probeNow runs
// them again.
func (k *kubelet) probeLate(names ...string) { k.set(k.late, true, names) }

func (k *kubelet) probeNow(names ...string) { k.set(k.late, false, names) }

func (k *kubelet) set(m map[string]bool, v bool, names []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range names {
		m[n] = v
	}
}

func (k *kubelet) setReady(ctx context.Context, p *corev1.Pod, ready bool) error {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p = p.DeepCopy()
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		PodIP:      "127.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.Now()}},
	}
	return client.IgnoreNotFound(k.c.Status().Update(ctx, p))
}

// imageMissing makes image one no registry has, as a version without a
// release or a mistyped repository would be.
func (k *kubelet) imageMissing(image string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.missing[image] = true
}

// cannotPull reports pod p waiting on its image, as a kubelet does.
func (k *kubelet) cannotPull(ctx context.Context, p *corev1.Pod) error {
	if reason, _, _ := pods.Stuck(p); reason == "ImagePullBackOff" {
		return nil
	}
	p = p.DeepCopy()
	p.Status = corev1.PodStatus{
		Phase: corev1.PodPending,
		ContainerStatuses: []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "` + p.Spec.Containers[0].Image + `"`},
		}}},
	}
	return client.IgnoreNotFound(k.c.Status().Update(ctx, p))
}

func claimOf(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// run starts the member of pod p with the flags and the image the operator
// gave it, on the pod's volume.
func (k *kubelet) run(ctx context.Context, p *corev1.Pod) (*member, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: claimOf(p)}, claim); err != nil {
		return nil, err // a real pod stays Pending
	}
	minor, err := minorOf(p.Spec.Containers[0].Image)
	if err != nil {
		return nil, err
	}
	flags := map[string]string{}
	for _, a := range p.Spec.Containers[0].Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[name] = value
	}
	s := startFlags{
		name:           flags["name"],
		peerURL:        flags["initial-advertise-peer-urls"],
		clientURL:      flags["advertise-client-urls"],
		initialCluster: flags["initial-cluster"],
		state:          flags["initial-cluster-state"],
		token:          flags["initial-cluster-token"],
		minor:          minor,
	}
	proc, err := k.etcd.start(string(claim.UID), s)
	if err != nil {
		return nil, err
	}
	return &member{uid: string(p.UID), clientURL: s.clientURL, process: proc}, nil
}

// stop stops the member of pod name; callers hold k.mu.
func (k *kubelet) stop(name string) {
	if m := k.members[name]; m != nil {
		k.etcd.stop(m.clientURL, m.process)
	}
	delete(k.members, name)
}
