package manager

import (
	"context"
	"flag"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// credentials says where ctrl.GetConfig found the operator's credentials,
// in its order: --kubeconfig, else $KUBECONFIG, else the token of the pod's
// ServiceAccount (in a pod), else ~/.kube/config. kopf's login handler made
// the same choice.
func credentials() string {
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		return "kubeconfig " + f.Value.String() + " (--kubeconfig)"
	}
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return "kubeconfig " + p + " ($KUBECONFIG)"
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return "the token of the pod's ServiceAccount (in-cluster)"
	}
	return "kubeconfig ~/.kube/config"
}

// logLogin logs which API server the operator talks to, as whom, and with
// which credentials. The API server says who (a SelfSubjectReview, which
// every authenticated user may make, as `kubectl auth whoami` does): the
// identity the operator's RBAC applies to.
func logLogin(ctx context.Context, mgr ctrl.Manager) {
	log := ctrl.Log.WithName("setup")
	cfg := mgr.GetConfig()
	review := &authenticationv1.SelfSubjectReview{}
	// A write, so never from the cache, which has not started yet.
	if err := mgr.GetClient().Create(ctx, review); err != nil {
		log.Error(err, "cannot ask the API server who the operator is logged in as", "server", cfg.Host, "credentials", credentials())
		return
	}
	log.Info("logged in", "server", cfg.Host, "user", review.Status.UserInfo.Username, "credentials", credentials())
}
