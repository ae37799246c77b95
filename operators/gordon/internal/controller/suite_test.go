package controller

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

// suite runs the Gordon controller against envtest for the integration
// tests of this package.
var suite = &testenv.Suite{
	CRDs:        []string{"operator.prgcont.cz_gordons.yaml"},
	AddToScheme: []func(*runtime.Scheme) error{gordonv1.AddToScheme},
	Setup: func(mgr ctrl.Manager) error {
		return (&GordonReconciler{
			Client:   mgr.GetClient(),
			Recorder: mgr.GetEventRecorder(FieldOwner),
			Requests: DefaultRequests,
		}).SetupWithManager(mgr)
	},
	Cache: Cache,
	RBAC:  "operators/gordon/config/rbac",
}

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m))
}
