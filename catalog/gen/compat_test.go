package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// Every CRD of a released bundle is compatible with the tree's, or the
// difference is noted in catalog/CRD-CHANGES.md: a cluster that upgrades
// keeps its custom resources valid, with every field. A note no finding
// matches any more is stale and fails too.
func TestReleasedCRDsStayCompatible(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "catalog", "CRD-CHANGES.md"))
	if err != nil {
		t.Fatal(err)
	}
	noted := notedChanges(string(doc))
	found := map[string]bool{}
	release := currentRelease(t)
	compared := 0
	for _, b := range committedBundles(t) {
		if generated(b, release) {
			continue
		}
		files, err := filepath.Glob(filepath.Join(root, "catalog", b.Dir(), "manifests", "*_*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			old := readCRD(t, f)
			cur := readCRD(t, filepath.Join(root, "crds", filepath.Base(f)))
			for _, c := range crdChanges(old, cur) {
				finding := b.Name() + ": " + c
				found[finding] = true
				if !noted[finding] {
					t.Errorf("not noted in catalog/CRD-CHANGES.md: %s", finding)
				}
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("no released bundle's CRD was compared")
	}
	for n := range noted {
		if !found[n] {
			t.Errorf("catalog/CRD-CHANGES.md notes %q, which no released CRD differs by any more", n)
		}
	}
}

func readCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := readYAML(file, "CustomResourceDefinition", crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// crdChanges finds what takes from the old release's objects, and nothing
// that only adds to what is admitted.
func TestCRDChanges(t *testing.T) {
	old := `
metadata: {name: things.example.com}
spec:
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
              kind: {type: string, enum: [a, b]}
              name: {type: string, maxLength: 20}
              gone: {type: string}
              list: {type: array, items: {type: object, properties: {x: {type: string}}}}
  - name: v0
    served: true
`
	cur := `
metadata: {name: things.example.com}
spec:
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size, kind]
            x-kubernetes-validations: [{rule: "self.size > 2"}]
            properties:
              size: {type: integer, minimum: 0, maximum: 5}
              kind: {type: string, enum: [a, c]}
              name: {type: string, maxLength: 30, pattern: "^[a-z]+$"}
              added: {type: string}
              list: {type: array, items: {type: object, properties: {x: {type: integer}}}}
`
	var o, c apiextensionsv1.CustomResourceDefinition
	if err := sigsyaml.Unmarshal([]byte(old), &o); err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal([]byte(cur), &c); err != nil {
		t.Fatal(err)
	}
	got := crdChanges(&o, &c)
	want := []string{
		"things.example.com v1: .spec requires kind",
		"things.example.com v1: .spec validation rule added: self.size > 2",
		"things.example.com v1: .spec.gone removed",
		"things.example.com v1: .spec.kind enum value \"b\" dropped",
		"things.example.com v1: .spec.list[].x type string became integer",
		"things.example.com v1: .spec.name pattern \"\" became \"^[a-z]+$\"",
		"things.example.com v1: .spec.size maximum 10 became 5",
		"things.example.com v0: no longer served",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if same := crdChanges(&o, &o); len(same) != 0 {
		t.Errorf("a CRD differs from itself: %v", same)
	}
}
