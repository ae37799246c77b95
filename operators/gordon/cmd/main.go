// Command gordon-operator runs the gordon operator: each Gordon keeps
// spec.gordon.replicas pods running. Run it against the current kubeconfig
// with `go run ./operators/gordon/cmd`; add -v=6 to see every request it
// makes to the API server.
package main

import (
	"flag"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/manager"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	"github.com/operator-workshops/workshop/operators/gordon/internal/controller"
)

func main() {
	requests := controller.DefaultRequests
	manager.Main(manager.Operator{
		Name:             "gordon",
		AddToScheme:      []func(*runtime.Scheme) error{gordonv1.AddToScheme},
		DefaultProbeAddr: ":8082",
		Flags: func(fs *flag.FlagSet) {
			requests.BindFlags(fs, "pod", "gordon pod")
		},
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			return (&controller.GordonReconciler{
				Client:   mgr.GetClient(),
				Recorder: mgr.GetEventRecorder(controller.FieldOwner),
				Requests: requests,
			}).SetupWithManager(mgr)
		},
		Cache: controller.Cache(),
	})
}
