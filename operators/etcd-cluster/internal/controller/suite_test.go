package controller

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
var network = newTestNetwork()

// suite runs the EtcdCluster controller against envtest. envtest has no
// nodes: each test starts a kubelet (kubelet_test.go) that runs the member
// pods as real etcd servers in this process.
var suite = &testenv.Suite{
	CRDs:        []string{"etcd.database.coreos.com_etcdclusters.yaml"},
	AddToScheme: []func(*runtime.Scheme) error{etcdv1.AddToScheme},
	Setup: func(mgr ctrl.Manager) error {
		return (&EtcdClusterReconciler{
			Client:       mgr.GetClient(),
			Recorder:     mgr.GetEventRecorder(FieldOwner),
			Etcd:         membership.NewEtcd(clientv3.Config{DialTimeout: 5 * time.Second}),
			Addressing:   network.For,
			ProbeTimeout: 3 * time.Second,
		}).SetupWithManager(mgr)
	},
}

// ownProcess marks a test process started by eachInItsOwnProcess.
const ownProcess = "ETCD_CONTROLLER_TEST_CHILD"

func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.list").Value.String() != "" {
		os.Exit(m.Run())
	}
	if os.Getenv(ownProcess) == "" && !testing.Short() && flag.Lookup("test.run").Value.String() == "" {
		os.Exit(eachInItsOwnProcess())
	}
	os.Exit(suite.Main(m))
}

// eachInItsOwnProcess runs every test of the package in a test process of
// its own, with its own envtest. The embedded etcd servers of a test do not
// all stop at once when it ends (some close for a long time), and a process
// that has run several tests' servers grows too slow for the operator's
// probes; a process per test keeps each test as fast as it is alone.
func eachInItsOwnProcess() int {
	out, err := exec.Command(os.Args[0], "-test.list", "^Test").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "listing the tests:", err)
		return 1
	}
	code := 0
	for _, name := range strings.Fields(string(out)) {
		args := []string{"-test.run", "^" + name + "$", "-test.timeout", "5m"}
		if testing.Verbose() {
			args = append(args, "-test.v")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), ownProcess+"=1")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "--- FAIL: %s (in its own process: %v)\n", name, err)
			code = 1
		}
	}
	return code
}
