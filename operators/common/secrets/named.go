package secrets

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/operator-workshops/workshop/operators/common/refs"
)

// namedIndex indexes the custom resources by the Secret their spec names.
const namedIndex = "spec.secretRef.name"

// Named sets up what an operator needs of the Secrets its custom resources
// (obj's type, listed as list) name in their spec: name returns the Secret
// one names, "" for none. It returns the Reader the operator reads them
// with (api reads around the cache) and the handler that brings a custom
// resource back when the Secret it names is created or changes, for a
// watch of Secrets' metadata (builder.OnlyMetadata).
func Named(mgr ctrl.Manager, api client.Reader, obj client.Object, list client.ObjectList, name func(client.Object) string) (*Reader, handler.EventHandler, error) {
	h, err := refs.Index(mgr, obj, list, namedIndex, func(o client.Object) []string {
		if n := name(o); n != "" {
			return []string{n}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return &Reader{Metadata: mgr.GetClient(), API: api}, h, nil
}
