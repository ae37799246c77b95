package manager

import (
	"flag"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
)

// OwnNamespace is the namespace the operator belongs to: in a pod, the pod's
// own ($POD_NAMESPACE, else its ServiceAccount's); outside, the namespace of
// the kubeconfig's current context, as kubectl uses it ("default" when the
// context names none). Namespaced operators watch it when no --namespace is
// given, as the coreos operators watched theirs.
func OwnNamespace() (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		rules.ExplicitPath = f.Value.String()
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil {
		return "", fmt.Errorf("find the operator's own namespace (give --namespace): %w", err)
	}
	return ns, nil
}
