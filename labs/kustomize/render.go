package main

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// base is the kustomization every Sample customizes.
//
//go:embed base
var base embed.FS

// instanceLabel marks, and selects, the objects of one Sample.
const instanceLabel = "app.kubernetes.io/instance"

// overlay is the kustomization of one Sample: the base with the Sample's name
// in front of every name, its own label on every object and selector (so
// that two Samples never share a pod), and count replicas. The training
// wrote a patch file instead and ran kubectl; kustomize's own transformers
// say the same without templating.
func overlay(name string, count int64) string {
	return fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
namePrefix: %[1]s-
labels:
- pairs:
    %[2]s: %[1]s
  includeSelectors: true
replicas:
- name: demo-deploy
  count: %[3]d
`, name, instanceLabel, count)
}

// Render runs kustomize, as a library, on the base customized for Sample
// name with count replicas, and returns the objects to apply. It touches no
// cluster: `go run . render NAME COUNT` prints what it returns.
func Render(name string, count int64) ([]*unstructured.Unstructured, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(base, "base", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := base.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/", p), data)
	})
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(overlay(name, count))); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/overlay")
	if err != nil {
		return nil, fmt.Errorf("kustomize: %w", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
}
