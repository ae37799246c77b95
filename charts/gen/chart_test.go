package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// The committed charts are what the generator writes from today's config.
// (make verify-generate checks it too; here it fails with the file.)
func TestChartsAreGenerated(t *testing.T) {
	ops, err := operators(root)
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(root, "catalog", "VERSION")))))
	for _, op := range ops {
		c, err := build(root, op, "ghcr.io/operator-workshops", version)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		var committed []string
		dir := filepath.Join(root, "charts", op)
		err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				committed = append(committed, must(filepath.Rel(dir, p)))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var generated []string
		for p, b := range c.files {
			generated = append(generated, p)
			if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("charts/%s/%s differs from what charts/gen writes (%v): run make generate", op, p, err)
			}
		}
		slices.Sort(committed)
		slices.Sort(generated)
		if !slices.Equal(committed, generated) {
			t.Errorf("charts/%s holds %v, charts/gen writes %v", op, committed, generated)
		}
	}
}

// helm lint passes on every chart, warnings included, with its defaults
// and cluster-wide.
func TestLint(t *testing.T) {
	for _, op := range must(operators(root)) {
		for _, vals := range []map[string]any{nil, {"clusterWide": true}} {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = op + "-operator-system"
			res := lint.Run([]string{filepath.Join(root, "charts", op)}, vals)
			if len(res.Errors) > 0 || res.TotalChartsLinted != 1 {
				t.Errorf("helm lint charts/%s %v: %d linted, errors %v", op, vals, res.TotalChartsLinted, res.Errors)
			}
			for _, m := range res.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint charts/%s: %s", op, m)
				}
			}
		}
	}
}

// With its defaults a chart installs what config/default does, and with
// clusterWide what config/cluster-wide does, object for object and field
// for field, in the namespace each variant runs in; but the Namespace,
// which Helm leaves to `--create-namespace`, and the image, which is the
// release's instead of the config's local one.
func TestChartsInstallWhatTheConfigDoes(t *testing.T) {
	for _, op := range must(operators(root)) {
		for _, variant := range []string{"default", "cluster-wide"} {
			t.Run(op+"/"+variant, func(t *testing.T) {
				want := configObjects(t, op, variant)
				var ns string
				for k, o := range want {
					if strings.HasPrefix(k, "Deployment/") {
						ns = o["metadata"].(map[string]any)["namespace"].(string)
						setImage(o, "ghcr.io/operator-workshops/"+op+"-operator:v"+chartVersion(t, op))
					}
				}
				got := renderChart(t, op, ns, map[string]any{"clusterWide": variant == "cluster-wide"})
				for k := range want {
					if _, ok := got[k]; !ok {
						t.Errorf("config/%s has %s, the chart does not", variant, k)
					}
				}
				for k, o := range got {
					if w, ok := want[k]; !ok {
						t.Errorf("the chart has %s, config/%s does not", k, variant)
					} else if !reflect.DeepEqual(o, w) {
						t.Errorf("%s differs:\nchart:  %s\nconfig: %s", k, must(yaml.Marshal(o)), must(yaml.Marshal(w)))
					}
				}
			})
		}
	}
}

// Each value does what values.yaml says.
func TestValues(t *testing.T) {
	const ns = "ops"
	deployment := func(objs map[string]map[string]any, op string) map[string]any {
		t.Helper()
		d, ok := objs["Deployment/"+op+"-operator"]
		if !ok {
			t.Fatalf("no Deployment %s-operator", op)
		}
		return d
	}
	args := func(d map[string]any) []string {
		var out []string
		for _, a := range container(d)["args"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}

	op := "gordon"
	objs := renderChart(t, op, ns, map[string]any{
		"image":          map[string]any{"digest": "sha256:abc", "pullPolicy": "Always"},
		"replicas":       2,
		"watchNamespace": "team-a",
		"resources":      map[string]any{"requests": map[string]any{"cpu": "50m"}, "limits": map[string]any{"memory": "512Mi"}},
		"metrics":        map[string]any{"enabled": false},
		"leaderElection": false,
	})
	d := deployment(objs, op)
	c := container(d)
	if c["image"] != "ghcr.io/operator-workshops/gordon-operator@sha256:abc" || c["imagePullPolicy"] != "Always" {
		t.Errorf("image %v, pull policy %v: want the digest's, Always", c["image"], c["imagePullPolicy"])
	}
	if r := d["spec"].(map[string]any)["replicas"]; r != float64(2) {
		t.Errorf("replicas %v, want 2", r)
	}
	// Helm merges the values given into the chart's: memory's request stays.
	if want := map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}, "limits": map[string]any{"memory": "512Mi"}}; !reflect.DeepEqual(c["resources"], want) {
		t.Errorf("resources %v, want %v", c["resources"], want)
	}
	a := args(d)
	if !slices.Contains(a, "--namespace=team-a") || !slices.Contains(a, "--metrics-bind-address=0") ||
		slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--leader-elect") }) {
		t.Errorf("args %q: want --namespace=team-a, --metrics-bind-address=0, no leader election", a)
	}
	if rb, ok := objs["RoleBinding/gordon-operator"]; !ok || rb["metadata"].(map[string]any)["namespace"] != "team-a" {
		t.Errorf("the operator's RoleBinding %v: want it in team-a", rb)
	}
	for k := range objs {
		if strings.Contains(k, "metrics") {
			t.Errorf("%s with metrics.enabled false", k)
		}
	}
	for k, o := range objs {
		if n, ok := o["metadata"].(map[string]any)["namespace"]; ok && n != ns && k != "RoleBinding/gordon-operator" {
			t.Errorf("%s in namespace %v, want the release's %s", k, n, ns)
		}
	}

	// The tag, when set, and the release's own otherwise.
	c = container(deployment(renderChart(t, op, ns, map[string]any{"image": map[string]any{"tag": "dev"}}), op))
	if c["image"] != "ghcr.io/operator-workshops/gordon-operator:dev" {
		t.Errorf("image %v with tag dev", c["image"])
	}
	// Cluster-wide: no RoleBinding to serve one namespace, a
	// ClusterRoleBinding instead, and no --namespace.
	objs = renderChart(t, op, ns, map[string]any{"clusterWide": true})
	if _, ok := objs["RoleBinding/gordon-operator"]; ok {
		t.Error("a namespace's RoleBinding when cluster-wide")
	}
	if _, ok := objs["ClusterRoleBinding/gordon-operator"]; !ok {
		t.Error("no ClusterRoleBinding when cluster-wide")
	}
	if a := args(deployment(objs, op)); slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--namespace=") }) {
		t.Errorf("args %q when cluster-wide", a)
	}
}

// A release's chart (make release) runs the released image by its digest,
// and is otherwise the chart of charts/.
func TestPackagedChartRunsTheReleasedImage(t *testing.T) {
	const op, ref = "gordon", "registry.example/gordon-operator@sha256:0123"
	c, err := build(root, op, "ghcr.io/operator-workshops", "0.3.0")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := c.pack(op, ref, out); err != nil {
		t.Fatal(err)
	}
	if err := c.pack("database", "registry.example/database-operator:v1", out); err == nil {
		t.Error("packed with an image named by tag")
	}
	packed := renderPath(t, filepath.Join(out, "gordon-operator-0.3.0.tgz"), op, "ns", nil)
	d := packed["Deployment/gordon-operator"]
	if image := container(d)["image"]; image != ref {
		t.Errorf("the packaged chart runs %v, want %s", image, ref)
	}
	setImage(d, "ghcr.io/operator-workshops/gordon-operator:v"+chartVersion(t, op))
	if want := renderChart(t, op, "ns", nil); !reflect.DeepEqual(packed, want) {
		t.Error("the packaged chart renders other objects than charts/gordon but for the image")
	}
}

// configObjects renders config/VARIANT with kustomize, by kind and name,
// without its Namespace.
func configObjects(t *testing.T, op, variant string) map[string]map[string]any {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "operators", op, "config", variant))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range m.Resources() {
		if r.GetKind() == "Namespace" {
			continue
		}
		var o map[string]any
		if err := yaml.Unmarshal(must(r.AsYAML()), &o); err != nil {
			t.Fatal(err)
		}
		out[r.GetKind()+"/"+r.GetName()] = o
	}
	return out
}

// renderChart renders charts/OP as `helm template -n NS` does with vals,
// and returns its objects by kind and name.
func renderChart(t *testing.T, op, ns string, vals map[string]any) map[string]map[string]any {
	t.Helper()
	return renderPath(t, filepath.Join(root, "charts", op), op, ns, vals)
}

// renderPath renders the chart at path (a folder or a .tgz).
func renderPath(t *testing.T, path, op, ns string, vals map[string]any) map[string]map[string]any {
	t.Helper()
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartcommon.ReleaseOptions{Name: op, Namespace: ns, IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for doc := range strings.SplitSeq(text, "\n---") {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if o == nil {
				continue
			}
			k := fmt.Sprintf("%s/%s", o["kind"], o["metadata"].(map[string]any)["name"])
			if _, dup := out[k]; dup {
				t.Errorf("%s twice", k)
			}
			out[k] = o
		}
	}
	return out
}

// container is the first container of a Deployment's pods, as decoded.
func container(deployment map[string]any) map[string]any {
	return deployment["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

func setImage(deployment map[string]any, image string) { container(deployment)["image"] = image }

func chartVersion(t *testing.T, op string) string {
	t.Helper()
	ch, err := loader.Load(filepath.Join(root, "charts", op))
	if err != nil {
		t.Fatal(err)
	}
	return ch.Metadata.AppVersion
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
