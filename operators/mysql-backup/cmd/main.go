// Command mysql-backup-operator runs the MySQL operator of the OTUS homework:
// each MySQL becomes a server with its storage, restored from the last backup
// when it is created and backed up before it is deleted. Run it against the
// current kubeconfig with `go run ./operators/mysql-backup/cmd`.
package main

import (
	"flag"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/secrets"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/controller"
)

func main() {
	deadline := controller.DefaultJobDeadline
	server, jobs := controller.DefaultServerRequests, controller.DefaultJobRequests
	var policy secrets.Policy
	manager.Main(manager.Operator{
		Name:             "mysql-backup",
		AddToScheme:      []func(*runtime.Scheme) error{mysqlv1.AddToScheme},
		DefaultProbeAddr: ":8083",
		Flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&deadline, "job-deadline", deadline,
				"How long a backup, restore or password Job may run before it counts as failed.")
			server.BindFlags(fs, "server", "MySQL's server pod")
			jobs.BindFlags(fs, "job", "backup, restore or password Job's pod")
			policy.BindFlags(fs)
		},
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			return (&controller.MySQLReconciler{
				Client:         mgr.GetClient(),
				APIReader:      mgr.GetAPIReader(),
				Recorder:       mgr.GetEventRecorder(controller.FieldOwner),
				JobDeadline:    deadline,
				ServerRequests: server,
				JobRequests:    jobs,
				Secrets:        policy,
			}).SetupWithManager(mgr)
		},
		Cache: controller.Cache(),
	})
}
