// Command database-operator runs the Database operator: each Database (mongo
// or mysql) becomes a Pod and a NodePort Service. Run it against the current
// kubeconfig with `go run ./operators/database/cmd`.
package main

import (
	"flag"

	"k8s.io/apimachinery/pkg/runtime"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/secrets"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
	"github.com/operator-workshops/workshop/operators/database/internal/controller"
)

func main() {
	images := map[dbv1.Type]string{}
	requests := controller.DefaultRequests
	var policy secrets.Policy
	manager.Main(manager.Operator{
		Name:        "database",
		AddToScheme: []func(*runtime.Scheme) error{dbv1.AddToScheme},
		Flags: func(fs *flag.FlagSet) {
			for _, t := range []dbv1.Type{dbv1.Mongo, dbv1.MySQL} {
				fs.Func(string(t)+"-image", "Image of "+string(t)+" Databases that name none (default "+
					controller.DefaultImage(t)+").", func(s string) error { images[t] = s; return nil })
			}
			requests.BindFlags(fs, "server", "Database's server pod")
			policy.BindFlags(fs)
		},
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			return (&controller.DatabaseReconciler{
				Client:    mgr.GetClient(),
				APIReader: mgr.GetAPIReader(),
				Recorder:  mgr.GetEventRecorder(controller.FieldOwner),
				Images:    images,
				Requests:  requests,
				Secrets:   policy,
			}).SetupWithManager(mgr)
		},
		Cache: controller.Cache(),
	})
}
