package controller

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// suite runs the Database controller against envtest for the integration
// tests of this package.
var suite = &testenv.Suite{
	CRDs:        []string{"zalando.org_databases.yaml"},
	AddToScheme: []func(*runtime.Scheme) error{dbv1.AddToScheme},
	Setup: func(mgr ctrl.Manager) error {
		return (&DatabaseReconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder(FieldOwner),
			Images:    map[dbv1.Type]string{},
			Requests:  DefaultRequests,
		}).SetupWithManager(mgr)
	},
	Cache: Cache,
	RBAC:  "operators/database/config/rbac",
	// No Secret's content in the cache: a password is read when needed.
	MetadataOnly: []string{"secrets"},
}

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m))
}
