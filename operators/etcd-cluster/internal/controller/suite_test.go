package controller

import (
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// network gives the members of every test cluster loopback addresses.
var network = newLoopback()

// suite runs the EtcdCluster controller against envtest. envtest has no
// nodes: each test starts a kubelet (kubelet_test.go) that runs the member
// pods as real etcd servers in this process.
var suite = &testenv.Suite{
	CRDs:        []string{"etcd.database.coreos.com_etcdclusters.yaml"},
	AddToScheme: []func(*runtime.Scheme) error{etcdv1.AddToScheme},
	Setup: func(mgr ctrl.Manager) error {
		return (&EtcdClusterReconciler{
			Client:       mgr.GetClient(),
			Recorder:     mgr.GetEventRecorder(fieldOwner),
			Etcd:         membership.NewEtcd(clientv3.Config{DialTimeout: 5 * time.Second}),
			Addressing:   network.For,
			ProbeTimeout: 3 * time.Second,
		}).SetupWithManager(mgr)
	},
}

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m))
}
