// Command gen writes a Helm chart per operator, charts/NAME, from the same
// sources as the install manifests and the OLM bundles: the operator's
// config/default and config/cluster-wide (built by kustomize), its CRDs in
// crds/, and its ClusterServiceVersion base in catalog/bases for the
// chart's description. The two variants become one set of templates: what
// both hold is written as it is, what only one holds is wrapped in
// `if .Values.clusterWide` or its negation, line by line. Then the values
// an admin sets (image, namespace, scope, resources, metrics, leader
// election, replicas) replace what the config wrote. Nothing of a chart is
// written by hand: make generate writes them, and verify-generate fails on
// a chart that differs from what this writes.
//
// With -out, it packages them instead, for a release (make release): each
// chart a .tgz in that folder, its values naming the operator's image by
// the digest -image gives.
//
//	go run . -root ../.. [-registry ghcr.io/operator-workshops] [-version 0.3.0]
//	go run . -root ../.. -out dist/charts -image gordon=REGISTRY/gordon-operator@sha256:... ...
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

func main() {
	root := flag.String("root", "../..", "the repository's root")
	registry := flag.String("registry", "ghcr.io/operator-workshops", "the registry the release's images are pushed to (make release-push)")
	version := flag.String("version", "", "the release the charts install (default: catalog/VERSION)")
	out := flag.String("out", "", "package the charts into this folder instead of writing charts/ (with -image for each operator)")
	images := map[string]string{}
	flag.Func("image", "OPERATOR=REPOSITORY@sha256:...: the image a packaged chart runs (repeat for each operator)", func(s string) error {
		op, ref, ok := strings.Cut(s, "=")
		if !ok || !strings.Contains(ref, "@sha256:") {
			return fmt.Errorf("want OPERATOR=REPOSITORY@sha256:..., not %q", s)
		}
		images[op] = ref
		return nil
	})
	flag.Parse()
	if err := run(*root, *registry, *version, *out, images); err != nil {
		fmt.Fprintln(os.Stderr, "charts/gen:", err)
		os.Exit(1)
	}
}

func run(root, registry, version, out string, images map[string]string) error {
	if version == "" {
		v, err := os.ReadFile(filepath.Join(root, "catalog", "VERSION"))
		if err != nil {
			return err
		}
		version = strings.TrimSpace(string(v))
	}
	ops, err := operators(root)
	if err != nil {
		return err
	}
	for _, op := range ops {
		c, err := build(root, op, registry, version)
		if err == nil && out != "" {
			err = c.pack(op, images[op], out)
		} else if err == nil {
			err = c.write(filepath.Join(root, "charts", op))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

// pack writes the chart as a .tgz into out, its image ref (by digest).
func (c *chart) pack(op, ref, out string) error {
	repo, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return fmt.Errorf("no -image %s=REPOSITORY@sha256:... to package its chart with", op)
	}
	vals := string(c.files["values.yaml"])
	for _, r := range [][2]string{
		{"\n  repository: " + valueOf(vals, "  repository: ") + "\n", "\n  repository: " + repo + "\n"},
		{"\n  digest: \"\"\n", "\n  digest: \"" + digest + "\"\n"},
	} {
		if !strings.Contains(vals, r[0]) {
			return fmt.Errorf("values.yaml has no line %q", strings.TrimSpace(r[0]))
		}
		vals = strings.Replace(vals, r[0], r[1], 1)
	}
	c.files["values.yaml"] = []byte(vals)
	tmp, err := os.MkdirTemp("", "chart-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := c.write(filepath.Join(tmp, op)); err != nil {
		return err
	}
	ch, err := loader.Load(filepath.Join(tmp, op))
	if err != nil {
		return err
	}
	file, err := chartutil.Save(ch, out)
	if err == nil {
		fmt.Fprintf(os.Stderr, "charts/gen: %s (%s)\n", file, ref)
	}
	return err
}

// valueOf returns the value of the first line of text starting with prefix.
func valueOf(text, prefix string) string { return field(strings.Split(text, "\n"), prefix) }

// operators lists the operators: the folders of operators/ with a
// cmd/main.go, as the Makefile's OPERATORS.
func operators(root string) ([]string, error) {
	mains, err := filepath.Glob(filepath.Join(root, "operators", "*", "cmd", "main.go"))
	if err != nil {
		return nil, err
	}
	if len(mains) == 0 {
		return nil, fmt.Errorf("no operators/*/cmd/main.go under %s", root)
	}
	var ops []string
	for _, m := range mains {
		ops = append(ops, filepath.Base(filepath.Dir(filepath.Dir(m))))
	}
	return ops, nil
}
