package controller

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
)

// etcd is the etcd of every test cluster (etcd_test.go).
var etcd = newFakeEtcd()

// suite runs the EtcdCluster controller against envtest. envtest has no
// nodes: a test that needs running members starts a kubelet
// (kubelet_test.go) that runs the member pods on the fake etcd.
var suite = &testenv.Suite{
	CRDs:        []string{"etcd.database.coreos.com_etcdclusters.yaml"},
	AddToScheme: []func(*runtime.Scheme) error{etcdv1.AddToScheme},
	Setup: func(mgr ctrl.Manager) error {
		return (&EtcdClusterReconciler{
			Client:    mgr.GetClient(),
			Recorder:  mgr.GetEventRecorder(FieldOwner),
			APIReader: mgr.GetAPIReader(),
			Etcd:      etcd,
			Requests:  DefaultRequests,
		}).SetupWithManager(mgr)
	},
	Cache: Cache,
	RBAC:  "operators/etcd-cluster/config/rbac",
}

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }
