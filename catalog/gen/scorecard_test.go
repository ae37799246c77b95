package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The checks of operator-sdk's scorecard, basic and OLM suites, on each
// bundle of the release the tree builds, as the scorecard's tests define
// them (operator-sdk v1.33.0, internal/scorecard/tests: they read the
// bundle only, so they run here without a cluster or its test image). The
// olm-bundle-validation test is operator-framework's bundle validators,
// which TestBundlesPassTheValidators runs. The released bundles stay as
// they were released.
//
//   - basic-check-spec: every example CR (alm-examples) has a spec;
//   - olm-crds-have-validation: every field of an example's spec and status
//     is in its CRD's schema for that version;
//   - olm-crds-have-resources: every owned CRD lists the kinds it creates;
//   - olm-spec-descriptors: every field of an example's spec has a spec
//     descriptor of that path;
//   - olm-status-descriptors: an example that has a status has status
//     descriptors.
func TestScorecardChecks(t *testing.T) {
	release := currentRelease(t)
	for _, b := range committedBundles(t) {
		if !generated(b, release) {
			continue
		}
		t.Run(b.Name(), func(t *testing.T) {
			bd, err := manifests.GetBundleFromDir(filepath.Join(root, "catalog", b.Dir()))
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range scorecard(bd) {
				t.Error(msg)
			}
		})
	}
}

// scorecard lists what the scorecard's tests above would fail bundle bd for.
func scorecard(bd *manifests.Bundle) []string {
	var fails []string
	var examples []map[string]any
	if err := json.Unmarshal([]byte(bd.CSV.Annotations["alm-examples"]), &examples); err != nil {
		return []string{fmt.Sprintf("alm-examples: %v", err)}
	}
	if len(examples) == 0 {
		fails = append(fails, "alm-examples: no example custom resource")
	}
	owned := map[string]v1alpha1.CRDDescription{}
	for _, d := range bd.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind] = d
		if len(d.Resources) == 0 {
			fails = append(fails, fmt.Sprintf("olm-crds-have-resources: owned CRD %s lists no resources", d.Name))
		}
	}
	for i, ex := range examples {
		kind, _ := ex["kind"].(string)
		apiVersion, _ := ex["apiVersion"].(string)
		name := fmt.Sprintf("example %d (%s)", i, kind)
		spec, ok := ex["spec"].(map[string]any)
		if !ok || len(spec) == 0 {
			fails = append(fails, fmt.Sprintf("basic-check-spec: %s has no spec", name))
		}
		status, _ := ex["status"].(map[string]any)
		desc, ok := owned[kind]
		if !ok {
			fails = append(fails, fmt.Sprintf("olm-spec-descriptors: %s is of no kind the CSV owns", name))
			continue
		}
		for field := range spec {
			if !hasDescriptor(desc.SpecDescriptors, field) {
				fails = append(fails, fmt.Sprintf("olm-spec-descriptors: %s: spec.%s has no spec descriptor (path %s)", name, field, field))
			}
		}
		if len(status) > 0 && len(desc.StatusDescriptors) == 0 {
			fails = append(fails, fmt.Sprintf("olm-status-descriptors: %s has a status and %s no status descriptor", name, desc.Name))
		}
		schema := exampleSchema(bd.V1CRDs, apiVersion, kind)
		if schema == nil {
			fails = append(fails, fmt.Sprintf("olm-crds-have-validation: %s: no CRD of the bundle serves %s with a schema", name, apiVersion))
			continue
		}
		for part, fields := range map[string]map[string]any{"spec": spec, "status": status} {
			for field := range fields {
				if _, ok := schema.Properties[part].Properties[field]; !ok {
					fails = append(fails, fmt.Sprintf("olm-crds-have-validation: %s: %s.%s is not in the CRD's schema", name, part, field))
				}
			}
		}
	}
	return fails
}

// hasDescriptor reports whether a descriptor's path is field, as the
// scorecard compares them: the spec's top-level field itself.
func hasDescriptor(descs []v1alpha1.SpecDescriptor, field string) bool {
	for _, d := range descs {
		if d.Path == field {
			return true
		}
	}
	return false
}

// exampleSchema is the schema the bundle's CRDs give apiVersion's kind.
func exampleSchema(crds []*apiextensionsv1.CustomResourceDefinition, apiVersion, kind string) *apiextensionsv1.JSONSchemaProps {
	group, version, _ := strings.Cut(apiVersion, "/")
	for _, crd := range crds {
		if crd.Spec.Group != group || !strings.EqualFold(crd.Spec.Names.Kind, kind) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if strings.EqualFold(v.Name, version) && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				return v.Schema.OpenAPIV3Schema
			}
		}
	}
	return nil
}

// The checks fail where the scorecard's would.
func TestScorecardFailsWhereScorecardWould(t *testing.T) {
	bd, err := manifests.GetBundleFromDir(filepath.Join(root, "catalog", "bundles", "gordon", currentRelease(t)))
	if err != nil {
		t.Fatal(err)
	}
	if fails := scorecard(bd); len(fails) != 0 {
		t.Fatalf("gordon's bundle: %v", fails)
	}
	for name, tc := range map[string]struct {
		change func(*manifests.Bundle)
		want   string
	}{
		"an example without spec": {func(bd *manifests.Bundle) {
			bd.CSV.Annotations["alm-examples"] = `[{"apiVersion":"operator.prgcont.cz/v1","kind":"Gordon","metadata":{"name":"g"}}]`
		}, "basic-check-spec"},
		"a spec field without descriptor": {func(bd *manifests.Bundle) {
			bd.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors = bd.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors[1:]
		}, "olm-spec-descriptors"},
		"a status without descriptors": {func(bd *manifests.Bundle) {
			bd.CSV.Annotations["alm-examples"] = `[{"apiVersion":"operator.prgcont.cz/v1","kind":"Gordon","spec":{"gordon":{"replicas":1}},"status":{"replicas":1}}]`
			bd.CSV.Spec.CustomResourceDefinitions.Owned[0].StatusDescriptors = nil
		}, "olm-status-descriptors"},
		"a field the schema does not know": {func(bd *manifests.Bundle) {
			bd.CSV.Annotations["alm-examples"] = `[{"apiVersion":"operator.prgcont.cz/v1","kind":"Gordon","spec":{"gordon":{"replicas":1},"size":3}}]`
			bd.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors = append(bd.CSV.Spec.CustomResourceDefinitions.Owned[0].SpecDescriptors, v1alpha1.SpecDescriptor{Path: "size"})
		}, "olm-crds-have-validation"},
		"an owned CRD without resources": {func(bd *manifests.Bundle) {
			bd.CSV.Spec.CustomResourceDefinitions.Owned[0].Resources = nil
		}, "olm-crds-have-resources"},
	} {
		t.Run(name, func(t *testing.T) {
			bd, err := manifests.GetBundleFromDir(filepath.Join(root, "catalog", "bundles", "gordon", currentRelease(t)))
			if err != nil {
				t.Fatal(err)
			}
			tc.change(bd)
			fails := scorecard(bd)
			if len(fails) != 1 || !strings.HasPrefix(fails[0], tc.want+":") {
				t.Errorf("scorecard says %q, want one %s failure", fails, tc.want)
			}
		})
	}
}
