package testenv

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// A Right is what RBAC checks for one request: a verb on a resource, or on
// a subresource ("databases/status"), of an API group ("" is the core
// group).
type Right struct {
	Verb, Group, Resource string
}

func (r Right) String() string {
	group := r.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s (%s)", r.Verb, r.Resource, group)
}

// rightsOf parses paths as the API server does for its authorizer.
var rightsOf = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// rightOf is the right RBAC checks for req; false for discovery and other
// non-resource requests, which every authenticated user may make.
func rightOf(req *http.Request) (Right, bool) {
	info, err := rightsOf.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return Right{}, false
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	return Right{Verb: info.Verb, Group: info.APIGroup, Resource: resource}, true
}

// recorder notes the right of every request the operator's manager sends.
// An informer's first list is a watch that streams the current objects
// (sendInitialEvents) where the API server offers it, and a list where it
// does not (client-go falls back): such a watch notes list too.
type recorder struct {
	mu   sync.Mutex
	used map[Right]bool
	// whole are the resources listed or watched for whole objects, not for
	// their metadata only (PartialObjectMetadata, builder.OnlyMetadata).
	whole map[string]bool
}

// wholeRead reports whether req lists or watches objects whole: the
// metadata client asks for PartialObjectMetadataList in its Accept header.
func wholeRead(req *http.Request, right Right) bool {
	return (right.Verb == "list" || right.Verb == "watch") &&
		!strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata")
}

func (r *recorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		right, ok := rightOf(req)
		if !ok {
			return resp, err
		}
		rights := []Right{right}
		if right.Verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true" {
			rights = append(rights, Right{Verb: "list", Group: right.Group, Resource: right.Resource})
		}
		// A server-side apply that creates its object is authorized as a
		// create too (and answered 201 Created).
		if right.Verb == "patch" && err == nil && resp.StatusCode == http.StatusCreated {
			rights = append(rights, Right{Verb: "create", Group: right.Group, Resource: right.Resource})
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.used == nil {
			r.used, r.whole = map[Right]bool{}, map[string]bool{}
		}
		for _, right := range rights {
			r.used[right] = true
		}
		if wholeRead(req, right) {
			r.whole[right.Resource] = true
		}
		return resp, err
	})
}

func (r *recorder) rights() map[Right]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Right]bool, len(r.used))
	for right := range r.used {
		out[right] = true
	}
	return out
}

// readWhole returns those of resources that were listed or watched whole.
func (r *recorder) readWhole(resources []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, res := range resources {
		if r.whole[res] {
			out = append(out, res)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// granted reads the rules of the operator's own Role and ClusterRole, its
// generated RBAC (role.yaml of dir, an operator's config/rbac), as the
// rights they grant; the other roles there are its users' (editor, viewer).
// A wildcard is an error: it grants what no one has read.
func granted(dir string) (map[Right]bool, error) {
	out := map[Right]bool{}
	f := filepath.Join(dir, "role.yaml")
	if err := readRoles(f, out); err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Role or ClusterRole with rules in %s", dir)
	}
	return out, nil
}

func readRoles(path string, into map[Right]bool) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = file.Close() }()
	dec := yaml.NewYAMLOrJSONDecoder(file, 4096)
	for {
		var doc struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if doc.Kind != "Role" && doc.Kind != "ClusterRole" {
			continue
		}
		for _, rule := range doc.Rules {
			if len(rule.NonResourceURLs) > 0 || len(rule.ResourceNames) > 0 {
				return fmt.Errorf("%s: a rule with nonResourceURLs or resourceNames, which this check does not read", doc.Kind)
			}
			for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
				if slices.Contains(list, rbacv1.ResourceAll) {
					return fmt.Errorf("%s: a wildcard in rule %v: name each group, resource and verb", doc.Kind, rule)
				}
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					for _, verb := range rule.Verbs {
						into[Right{Verb: verb, Group: group, Resource: resource}] = true
					}
				}
			}
		}
	}
}

// compareRights says what used needs that granted lacks (the deployed
// operator would be refused), and what granted gives that nothing used (a
// right the code never calls). Two rights are granted without a request in
// the tests: update on the finalizers of a kind the operator watches, which
// the OwnerReferencesPermissionEnforcement admission plugin (OpenShift
// enables it) checks when a child's owner reference blocks its owner's
// deletion; and patch on events.k8s.io Events where the operator creates
// them, which client-go's event recorder sends when an Event repeats (it
// counts the repeats in the first one's series).
func compareRights(used, granted map[Right]bool) error {
	var missing, unused []string
	for right := range used {
		if !granted[right] {
			missing = append(missing, right.String())
		}
	}
	for right := range granted {
		if used[right] {
			continue
		}
		if owner, ok := strings.CutSuffix(right.Resource, "/finalizers"); ok && right.Verb == "update" &&
			used[Right{Verb: "watch", Group: right.Group, Resource: owner}] {
			continue
		}
		if right == (Right{Verb: "patch", Group: "events.k8s.io", Resource: "events"}) &&
			used[Right{Verb: "create", Group: "events.k8s.io", Resource: "events"}] {
			continue
		}
		unused = append(unused, right.String())
	}
	slices.Sort(missing)
	slices.Sort(unused)
	var errs []error
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("the operator sent requests its RBAC does not allow (add them to its +kubebuilder:rbac markers "+
			"and run make generate): %s", strings.Join(missing, ", ")))
	}
	if len(unused) > 0 {
		errs = append(errs, fmt.Errorf("its RBAC grants rights no request of the integration tests used (drop them from the "+
			"+kubebuilder:rbac markers, or test the code that needs them): %s", strings.Join(unused, ", ")))
	}
	return errors.Join(errs...)
}
