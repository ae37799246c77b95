package controller

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// suite runs the MySQL controller against envtest. envtest has no
// controller-manager and no kubelet: the tests play their part (Deployment
// availability, Job completion, garbage collection) where it matters.
var suite = &testenv.Suite{
	CRDs:        []string{"otus.homework_mysqls.yaml"},
	AddToScheme: []func(*runtime.Scheme) error{mysqlv1.AddToScheme},
	Setup: func(mgr ctrl.Manager) error {
		return (&MySQLReconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder(FieldOwner),
			// What the operator runs with (cmd/main.go's defaults).
			ServerRequests: DefaultServerRequests,
			JobRequests:    DefaultJobRequests,
		}).SetupWithManager(mgr)
	},
	Cache: Cache,
	RBAC:  "operators/mysql-backup/config/rbac",
	// No Secret's content in the cache: a password is read when needed.
	MetadataOnly: []string{"secrets"},
}

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m))
}
