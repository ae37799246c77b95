// Command etcd-cluster-operator runs the etcd-cluster operator: each
// EtcdCluster becomes spec.size etcd members. Run it against the current
// kubeconfig with `go run ./operators/etcd-cluster/cmd`; it then manages the
// EtcdClusters of the current context's namespace, or of --namespace, or,
// with --cluster-wide, the annotated ones of every namespace.
package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/manager"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/controller"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/portforward"
)

// How the operator reaches the members' client ports.
const (
	accessAuto        = "auto"
	accessDirect      = "direct"
	accessPortForward = "port-forward"
)

func main() {
	var (
		clusterWide bool
		access      = accessAuto
		requests    = controller.DefaultRequests
	)
	manager.Main(manager.Operator{
		Name:             "etcd-cluster",
		AddToScheme:      []func(*runtime.Scheme) error{etcdv1.AddToScheme},
		DefaultProbeAddr: ":8084",
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&clusterWide, "cluster-wide", false,
				"Act on the EtcdClusters of every namespace annotated "+etcdv1.ScopeAnnotation+": "+etcdv1.ScopeClusterWide+
					", and only on them. Without it the operator acts on the EtcdClusters without the annotation in "+
					"--namespace, else its own namespace (the pod's, or the current kubeconfig context's).")
			fs.StringVar(&access, "member-access", access,
				"How to reach the etcd members: direct (pod DNS names; from inside the cluster), port-forward "+
					"(through the API server; from outside), or auto: direct in a pod, port-forward elsewhere.")
			requests.BindFlags(fs, "member", "member pod whose cluster's spec.pod.resources is empty")
		},
		Configure: func(o *manager.Options) error {
			if clusterWide {
				if len(o.Namespaces) > 0 {
					return errors.New("--cluster-wide acts on every namespace: drop --namespace (and $" + manager.WatchNamespaceEnv + ")")
				}
				return nil
			}
			if len(o.Namespaces) == 0 {
				ns, err := manager.OwnNamespace()
				if err != nil {
					return err
				}
				o.Namespaces = []string{ns}
			}
			return nil
		},
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			etcd, err := etcdClient(mgr.GetConfig(), access)
			if err != nil {
				return err
			}
			return (&controller.EtcdClusterReconciler{
				Client:      mgr.GetClient(),
				Recorder:    mgr.GetEventRecorder(controller.FieldOwner),
				APIReader:   mgr.GetAPIReader(),
				ClusterWide: clusterWide,
				Etcd:        etcd,
				Requests:    requests,
			}).SetupWithManager(mgr)
		},
		Cache: controller.Cache(),
	})
}

// etcdClient reaches the members directly, or through the API server.
func etcdClient(cfg *rest.Config, access string) (membership.Client, error) {
	etcdCfg := clientv3.Config{DialTimeout: 3 * time.Second}
	if access == accessAuto {
		access = accessPortForward
		if _, err := rest.InClusterConfig(); err == nil {
			access = accessDirect
		}
	}
	switch access {
	case accessDirect:
	case accessPortForward:
		pf, err := portforward.New(cfg)
		if err != nil {
			return nil, err
		}
		etcdCfg.DialOptions = []grpc.DialOption{grpc.WithContextDialer(pf.DialContext)}
	default:
		return nil, fmt.Errorf("--member-access=%s: want auto, direct or port-forward", access)
	}
	ctrl.Log.WithName("setup").Info("reaching etcd members", "access", access)
	return membership.NewEtcd(etcdCfg), nil
}
