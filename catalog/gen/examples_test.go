package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
)

// schemaValidators reads the CRDs of a bundle and returns a validator per
// group/version/kind.
func schemaValidators(t *testing.T, b bundle) map[string]validation.SchemaValidator {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "catalog", b.Dir(), "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]validation.SchemaValidator{}
	for _, f := range files {
		// The CRDs, not the CSV nor the metrics Service and role.
		docs, err := documents(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 1 {
			t.Fatalf("%s holds %d objects, want one", f, len(docs))
		}
		if kind, err := kindOf(docs[0]); err != nil || kind != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := readYAML(f, "CustomResourceDefinition", &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				t.Fatal(err)
			}
			validator, _, err := validation.NewSchemaValidator(&internal)
			if err != nil {
				t.Fatal(err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = validator
		}
	}
	return out
}

// examples reads a CSV's alm-examples.
func examples(t *testing.T, b bundle) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal([]byte(readCSV(t, b).Annotations["alm-examples"]), &out); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	return out
}

func validateExample(validators map[string]validation.SchemaValidator, ex map[string]any) (string, []string) {
	apiVersion, _ := ex["apiVersion"].(string)
	kind, _ := ex["kind"].(string)
	key := apiVersion + "/" + kind
	v, ok := validators[key]
	if !ok {
		return key, []string{"no CRD of the bundle serves it"}
	}
	var msgs []string
	for _, e := range validation.ValidateCustomResource(nil, ex, v) {
		msgs = append(msgs, e.Error())
	}
	return key, msgs
}

// Every example a CSV shows in OperatorHub is an object its CRD's schema
// accepts, and every owned CRD has one.
func TestExamplesMatchTheirCRDs(t *testing.T) {
	for _, b := range committedBundles(t) {
		t.Run(b.Name(), func(t *testing.T) {
			validators := schemaValidators(t, b)
			seen := map[string]bool{}
			for _, ex := range examples(t, b) {
				key, errs := validateExample(validators, ex)
				seen[key] = true
				for _, e := range errs {
					t.Errorf("example %s: %s", key, e)
				}
			}
			for key := range validators {
				if !seen[key] {
					t.Errorf("no example of %s", key)
				}
			}
		})
	}
	// The check can fail: a Database of an unknown type is refused.
	var b bundle
	for _, cb := range committedBundles(t) {
		if cb.Package == "database" {
			b = cb
		}
	}
	bad := examples(t, b)[0]
	bad["spec"] = map[string]any{"type": "postgres"}
	if _, errs := validateExample(schemaValidators(t, b), bad); len(errs) == 0 {
		t.Error("a Database of type postgres passed the schema")
	}
}
