package controller

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/loopback"
)

// kubelet plays the nodes of envtest for one namespace: for every member pod
// the operator creates it runs a real etcd server in this process, started
// with the pod's own flags, on the loopback addresses the test network gave
// the member. A pod's volume is a directory that lives as long as its
// PersistentVolumeClaim (the directory is named after the claim's UID), so a
// pod that is deleted comes back with its data and a deleted claim takes the
// data with it, as on a real node.
type kubelet struct {
	t    *testing.T
	c    client.Client
	ns   string
	root string

	mu      sync.Mutex
	servers map[string]*server // by pod name
	errs    map[string]string  // the last error starting each pod, logged once
	closing sync.WaitGroup
	done    chan struct{}
}

type server struct {
	uid     string // of the pod it runs for
	etcd    *embed.Etcd
	stopped chan struct{}
}

func startKubelet(t *testing.T, c client.Client, ns string) *kubelet {
	k := &kubelet{t: t, c: c, ns: ns, root: t.TempDir(), servers: map[string]*server{}, errs: map[string]string{}, done: make(chan struct{})}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-k.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if err := k.sync(context.Background()); err != nil {
				t.Logf("kubelet: %v", err)
			}
		}
	}()
	t.Cleanup(func() {
		close(k.done)
		<-stopped
		k.mu.Lock()
		for name := range k.servers {
			k.stop(name)
		}
		k.mu.Unlock()
		// An embedded server's Close can wait for a peer connection that
		// no one closes; the test does not wait for it forever.
		closed := make(chan struct{})
		go func() { k.closing.Wait(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Log("kubelet: some etcd servers are still closing; leaving them")
		}
	})
	return k
}

// sync starts the servers of new pods, stops those of deleted pods and lets
// deleted claims go once no pod uses them, taking their directory along.
func (k *kubelet) sync(ctx context.Context) error {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(k.ns)); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	live := map[string]bool{}
	claimed := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		live[p.Name] = true
		claimed[claimOf(p)] = true
		s := k.servers[p.Name]
		if s != nil && s.uid != string(p.UID) {
			k.stop(p.Name) // the pod was replaced
			s = nil
		}
		if s != nil {
			select {
			case <-s.stopped: // etcd exited: restart it, as restartPolicy Always does
				k.stop(p.Name)
			default:
				continue
			}
		}
		if p.DeletionTimestamp.IsZero() {
			// A pod replaced moments ago may find its ports still held
			// by the old server: retried, as a crashing container is.
			if err := k.run(ctx, p); err != nil && err.Error() != k.errs[p.Name] {
				k.errs[p.Name] = err.Error()
				k.t.Logf("kubelet: %s: %v (retrying)", p.Name, err)
			}
		}
	}
	for name := range k.servers {
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
		if err := os.RemoveAll(filepath.Join(k.root, string(v.UID))); err != nil {
			return err
		}
		patch := client.MergeFrom(v.DeepCopy())
		v.Finalizers = nil
		if err := k.c.Patch(ctx, v, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func claimOf(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// run starts etcd for pod p with the flags the operator gave it, and marks
// the pod Running and Ready once etcd serves.
func (k *kubelet) run(ctx context.Context, p *corev1.Pod) error {
	claim := &corev1.PersistentVolumeClaim{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: claimOf(p)}, claim); err != nil {
		return fmt.Errorf("volume: %w", err) // a real pod stays Pending
	}
	flags := map[string]string{}
	for _, a := range p.Spec.Containers[0].Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[name] = value
	}
	cfg := embed.NewConfig()
	cfg.Name = flags["name"]
	cfg.Dir = filepath.Join(k.root, string(claim.UID), strings.TrimPrefix(flags["data-dir"], dataMount))
	peer, err := url.Parse(flags["initial-advertise-peer-urls"])
	if err != nil {
		return err
	}
	clientURL, err := url.Parse(flags["advertise-client-urls"])
	if err != nil {
		return err
	}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*clientURL}, []url.URL{*clientURL}
	cfg.InitialCluster = flags["initial-cluster"]
	cfg.ClusterState = flags["initial-cluster-state"]
	cfg.InitialClusterToken = flags["initial-cluster-token"]
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	s := &server{uid: string(p.UID), etcd: e, stopped: make(chan struct{})}
	k.servers[p.Name] = s
	go func() {
		select {
		case <-e.Server.StopNotify():
			close(s.stopped)
			return
		case <-e.Server.ReadyNotify():
		}
		ready := p.DeepCopy()
		ready.Status = corev1.PodStatus{
			Phase: corev1.PodRunning,
			PodIP: "127.0.0.1",
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
			}},
		}
		if err := k.c.Status().Update(context.Background(), ready); client.IgnoreNotFound(err) != nil {
			k.t.Logf("kubelet: %s status: %v", p.Name, err)
		}
		<-e.Server.StopNotify()
		close(s.stopped)
	}()
	return nil
}

// stop stops the server of pod name in the background, as a pod's
// termination does; callers hold k.mu.
func (k *kubelet) stop(name string) {
	s := k.servers[name]
	delete(k.servers, name)
	if s == nil {
		return
	}
	k.closing.Add(1)
	go func() {
		defer k.closing.Done()
		// Not HardStop: it closes the backend under the server's own
		// goroutines, which then crash the whole test process.
		s.etcd.Close()
	}()
}

// testNetwork is the test network: every member gets a peer and a client
// port of 127.0.0.1, so the servers of the kubelet reach each other and the
// operator reaches them.
type testNetwork struct {
	mu      sync.Mutex
	peers   map[string]string // by namespace/member
	clients map[string]string
}

func newTestNetwork() *testNetwork {
	return &testNetwork{peers: map[string]string{}, clients: map[string]string{}}
}

// For is the Addressing of cluster c.
func (l *testNetwork) For(c *etcdv1.EtcdCluster) Addressing { return networkCluster{l, c.Namespace} }

type networkCluster struct {
	l  *testNetwork
	ns string
}

func (a networkCluster) urls(name string) (peer, client string) {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	key := a.ns + "/" + name
	if _, ok := a.l.peers[key]; !ok {
		a.l.peers[key] = "http://" + loopback.FreeAddr()
		a.l.clients[key] = "http://" + loopback.FreeAddr()
	}
	return a.l.peers[key], a.l.clients[key]
}

func (a networkCluster) PeerURL(name string) string { p, _ := a.urls(name); return p }

func (a networkCluster) ClientURL(name string) string { _, c := a.urls(name); return c }

func (a networkCluster) Name(peerURL string) string {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	for key, u := range a.l.peers {
		if ns, name, _ := strings.Cut(key, "/"); ns == a.ns && u == peerURL {
			return name
		}
	}
	return ""
}
