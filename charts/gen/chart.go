package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// object is one object of a variant as kustomize wrote it, line by line.
type object struct {
	kind, name string
	lines      []string
}

func (o object) key() string { return o.kind + "/" + o.name }

// chart is what charts/NAME holds.
type chart struct {
	files map[string][]byte // by path in the chart
}

// The values' paths, as the templates name them.
const (
	namespaceRef      = "{{ .Release.Namespace }}"
	watchNamespaceRef = "{{ .Values.watchNamespace }}"
	ifClusterWide     = "{{- if .Values.clusterWide }}"
	ifNamespaced      = "{{- if not .Values.clusterWide }}"
	orElse            = "{{- else }}"
	end               = "{{- end }}"
)

// render builds a kustomization as kubectl kustomize does, and returns its
// objects in kustomize's order.
func render(dir string) ([]object, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	var objs []object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		objs = append(objs, object{kind: r.GetKind(), name: r.GetName(), lines: strings.Split(strings.TrimRight(string(y), "\n"), "\n")})
	}
	return objs, nil
}

// variant is one config variant, its namespaces made the chart's.
type variant struct {
	objects []object
	// namespace is the operator's own (its Deployment's); watch, the
	// other namespace it names (the one a namespaced operator serves),
	// "" for none.
	namespace, watch string
}

var (
	namespaceLine = regexp.MustCompile(`^(\s*(?:- )?namespace: )(\S+)$`)
	electionArg   = regexp.MustCompile(`^(\s*- --leader-election-namespace=)(\S+)$`)
	watchArg      = regexp.MustCompile(`^(\s*- --namespace=)(\S+)$`)
)

// load renders config/NAME and replaces its namespaces with the chart's:
// the operator's own is the release's, any other the one it serves
// (watchNamespace). A namespace named anywhere else is an error, so that
// none is left behind unnoticed. The Namespace object goes: Helm installs
// into a namespace that exists (or that --create-namespace makes).
func load(root, op, name string) (variant, error) {
	objs, err := render(filepath.Join(root, "operators", op, "config", name))
	if err != nil {
		return variant{}, err
	}
	var v variant
	for _, o := range objs {
		if o.kind == "Deployment" {
			v.namespace = field(o.lines, "  namespace: ")
		}
	}
	if v.namespace == "" {
		return v, fmt.Errorf("config/%s has no Deployment with a namespace", name)
	}
	for _, o := range objs {
		if o.kind == "Namespace" {
			continue
		}
		for i, l := range o.lines {
			if strings.Contains(l, "{{") {
				return v, fmt.Errorf("config/%s: %s holds a template's braces: %q", name, o.key(), l)
			}
			for _, re := range []*regexp.Regexp{namespaceLine, electionArg, watchArg} {
				m := re.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				switch {
				case m[2] == v.namespace:
					o.lines[i] = m[1] + namespaceRef
				case re == electionArg:
					return v, fmt.Errorf("config/%s: leader election in %s, not in the operator's namespace %s", name, m[2], v.namespace)
				case v.watch == "" || v.watch == m[2]:
					v.watch = m[2]
					o.lines[i] = m[1] + watchNamespaceRef
				default:
					return v, fmt.Errorf("config/%s names namespaces %s and %s besides its own", name, v.watch, m[2])
				}
			}
			if names(o.lines[i], v.namespace) || (v.watch != "" && names(o.lines[i], v.watch)) {
				return v, fmt.Errorf("config/%s: %s names a namespace where the chart cannot set it: %q", name, o.key(), l)
			}
		}
		v.objects = append(v.objects, o)
	}
	return v, nil
}

// names reports whether line holds namespace as a word of its own.
func names(line, namespace string) bool {
	return regexp.MustCompile(`(^|[^-.\w])` + regexp.QuoteMeta(namespace) + `($|[^-.\w])`).MatchString(line)
}

// field returns the value of the first line that starts with prefix.
func field(lines []string, prefix string) string {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// merge writes the lines of a and b, an object's lines in the namespaced
// and the cluster-wide variant, as one template: the lines both hold as
// they are, the others under the condition of their variant.
func merge(a, b []string) []string {
	// The longest common subsequence, by dynamic programming: the
	// objects have tens of lines.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out, onlyA, onlyB []string
	flush := func() {
		switch {
		case len(onlyA) > 0 && len(onlyB) > 0:
			out = append(append(append(append(append(out, ifNamespaced), onlyA...), orElse), onlyB...), end)
		case len(onlyA) > 0:
			out = append(append(append(out, ifNamespaced), onlyA...), end)
		case len(onlyB) > 0:
			out = append(append(append(out, ifClusterWide), onlyB...), end)
		}
		onlyA, onlyB = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			flush()
			out = append(out, a[i])
			i++
			j++
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			onlyA = append(onlyA, a[i])
			i++
		default:
			onlyB = append(onlyB, b[j])
			j++
		}
	}
	flush()
	return out
}

// templates merges the two variants' objects: those both hold (by kind and
// name) line by line, the others whole under their variant's condition.
// The namespaced variant's order comes first, then what only the
// cluster-wide one holds.
func templates(ns, cw variant) []object {
	byKey := map[string]object{}
	for _, o := range cw.objects {
		byKey[o.key()] = o
	}
	var out []object
	for _, o := range ns.objects {
		if c, ok := byKey[o.key()]; ok {
			out = append(out, object{o.kind, o.name, merge(o.lines, c.lines)})
			delete(byKey, o.key())
			continue
		}
		out = append(out, object{o.kind, o.name, wrap(ifNamespaced, o.lines)})
	}
	for _, o := range cw.objects {
		if _, ok := byKey[o.key()]; ok {
			out = append(out, object{o.kind, o.name, wrap(ifClusterWide, o.lines)})
		}
	}
	return out
}

func wrap(cond string, lines []string) []string {
	return append(append([]string{cond}, lines...), end)
}

// metricsObject reports whether o serves only the metrics: their Service,
// and the roles that let the operator check a scraper's token and let a
// scraper read them.
func metricsObject(op string, o object) bool {
	return strings.HasPrefix(o.name, op+"-operator-metrics")
}

// values is what values.yaml sets, found in the config.
type values struct {
	pullPolicy, replicas, metricsAddress string
	resources                            []string // the YAML of the container's resources, unindented
}

var (
	imageLine     = regexp.MustCompile(`^(\s*image: )(\S+)$`)
	pullLine      = regexp.MustCompile(`^(\s*imagePullPolicy: )(\S+)$`)
	replicasLine  = regexp.MustCompile(`^(  replicas: )(\d+)$`)
	resourcesLine = regexp.MustCompile(`^(\s*)resources:$`)
	electionLine  = regexp.MustCompile(`^\s*- --leader-elect(ion-namespace=.*)?$`)
	metricsArg    = regexp.MustCompile(`^(\s*- --metrics-bind-address=)(\S+)$`)
)

// parameterize replaces in the Deployment's lines what the values set.
func parameterize(op string, lines []string) ([]string, values, error) {
	var (
		v   values
		out []string
	)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := imageLine.FindStringSubmatch(l); m != nil {
			if m[2] != op+"-operator:dev" {
				return nil, v, fmt.Errorf("the Deployment runs %s, not %s-operator:dev", m[2], op)
			}
			out = append(out, m[1]+`"{{ .Values.image.repository }}{{ if .Values.image.digest }}@{{ .Values.image.digest }}{{ else }}:{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}{{ end }}"`)
			continue
		}
		if m := pullLine.FindStringSubmatch(l); m != nil {
			v.pullPolicy = m[2]
			out = append(out, m[1]+"{{ .Values.image.pullPolicy }}")
			continue
		}
		if m := replicasLine.FindStringSubmatch(l); m != nil {
			v.replicas = m[2]
			out = append(out, m[1]+"{{ .Values.replicas }}")
			continue
		}
		if m := metricsArg.FindStringSubmatch(l); m != nil {
			v.metricsAddress = m[2]
			out = append(out, m[1]+"{{ if .Values.metrics.enabled }}"+m[2]+"{{ else }}0{{ end }}")
			continue
		}
		if electionLine.MatchString(l) {
			// The election's flags, one block for those in a row.
			out = append(out, "{{- if .Values.leaderElection }}", l)
			for i+1 < len(lines) && electionLine.MatchString(lines[i+1]) {
				i++
				out = append(out, lines[i])
			}
			out = append(out, end)
			continue
		}
		if m := resourcesLine.FindStringSubmatch(l); m != nil {
			indent := len(m[1])
			for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent {
				i++
				if strings.Contains(lines[i], "{{") {
					return nil, v, fmt.Errorf("the container's resources differ between the variants")
				}
				v.resources = append(v.resources, lines[i][indent+2:])
			}
			out = append(out, l, fmt.Sprintf("  {{- toYaml .Values.resources | nindent %d }}", indent+2))
			continue
		}
		out = append(out, l)
	}
	switch {
	case v.pullPolicy == "":
		return nil, v, fmt.Errorf("the Deployment sets no imagePullPolicy")
	case v.replicas == "":
		return nil, v, fmt.Errorf("the Deployment sets no replicas")
	case v.metricsAddress == "":
		return nil, v, fmt.Errorf("the Deployment sets no --metrics-bind-address")
	case len(v.resources) == 0:
		return nil, v, fmt.Errorf("the Deployment's container sets no resources")
	}
	return out, v, nil
}

// build makes op's chart.
func build(root, op, registry, version string) (*chart, error) {
	ns, err := load(root, op, "default")
	if err != nil {
		return nil, err
	}
	cw, err := load(root, op, "cluster-wide")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	var (
		deployment, rbac, metrics bytes.Buffer
		vals                      values
		found                     bool
	)
	for _, o := range templates(ns, cw) {
		lines := o.lines
		to := &rbac
		switch {
		case o.kind == "Deployment":
			if found {
				return nil, fmt.Errorf("two Deployments")
			}
			found = true
			if lines, vals, err = parameterize(op, lines); err != nil {
				return nil, err
			}
			to = &deployment
		case metricsObject(op, o):
			lines = wrap("{{- if .Values.metrics.enabled }}", lines)
			to = &metrics
		}
		fmt.Fprintf(to, "---\n%s\n", strings.Join(lines, "\n"))
	}
	if !found {
		return nil, fmt.Errorf("no Deployment")
	}
	header := "# Generated by charts/gen from operators/" + op + "/config: do not edit.\n"
	for name, b := range map[string]*bytes.Buffer{"deployment.yaml": &deployment, "rbac.yaml": &rbac, "metrics.yaml": &metrics} {
		files["templates/"+name] = append([]byte(header), b.Bytes()...)
	}
	crds, err := crdFiles(root, op)
	if err != nil {
		return nil, err
	}
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		files["crds/"+filepath.Base(f)] = b
	}
	meta, err := chartMeta(root, op, version)
	if err != nil {
		return nil, err
	}
	files["Chart.yaml"] = meta
	files["values.yaml"] = valuesYAML(op, registry, ns.watch, vals)
	files["templates/NOTES.txt"] = notes(op, ns.watch)
	return &chart{files: files}, nil
}

// crdFiles lists the files of crds/ that define op's API: those of its
// API group, as release.sh's crds.
func crdFiles(root, op string) ([]string, error) {
	infos, err := filepath.Glob(filepath.Join(root, "operators", op, "api", "*", "groupversion_info.go"))
	if err != nil || len(infos) == 0 {
		return nil, fmt.Errorf("operators/%s has no API (api/*/groupversion_info.go)", op)
	}
	src, err := os.ReadFile(infos[0])
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`schema.GroupVersion\{Group: "([^"]+)"`).FindSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("%s names no API group", infos[0])
	}
	files, err := filepath.Glob(filepath.Join(root, "crds", string(m[1])+"_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("crds/ holds no CRD of group %s", m[1])
	}
	return files, nil
}

// chartMeta writes Chart.yaml from the operator's ClusterServiceVersion
// base: its description, keywords, home, maintainers and oldest Kubernetes.
func chartMeta(root, op, version string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(root, "catalog", "bases", op+".clusterserviceversion.yaml"))
	if err != nil {
		return nil, err
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Keywords       []string `json:"keywords"`
			MinKubeVersion string   `json:"minKubeVersion"`
			Maintainers    []struct {
				Name  string `json:"name"`
				Email string `json:"email"`
			} `json:"maintainers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return nil, fmt.Errorf("catalog/bases/%s.clusterserviceversion.yaml: %w", op, err)
	}
	meta := map[string]any{
		"apiVersion":  "v2",
		"name":        op + "-operator",
		"description": csv.Metadata.Annotations["description"],
		"type":        "application",
		"version":     version,
		"appVersion":  version,
		"kubeVersion": ">= " + csv.Spec.MinKubeVersion + "-0",
		"keywords":    csv.Spec.Keywords,
		"home":        csv.Metadata.Annotations["repository"],
		"sources":     []string{csv.Metadata.Annotations["repository"]},
		"maintainers": csv.Spec.Maintainers,
	}
	for _, k := range []string{"description", "home"} {
		if meta[k] == "" {
			return nil, fmt.Errorf("catalog/bases/%s.clusterserviceversion.yaml has no %s", op, k)
		}
	}
	b, err := yaml.Marshal(meta)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated by charts/gen from catalog/bases: do not edit.\n"), b...), nil
}

// valuesYAML writes values.yaml: the config's own values, each explained.
func valuesYAML(op, registry, watch string, v values) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `# Generated by charts/gen from operators/%[1]s/config: do not edit.
# The values of the %[1]s operator's chart. Its defaults install what
# operators/%[1]s/config/default does.

image:
  repository: %[2]s/%[1]s-operator
  # The tag; empty for the chart's own release (v<appVersion>).
  tag: ""
  # A digest (sha256:...) to run instead of the tag: what make release's
  # manifests name.
  digest: ""
  pullPolicy: %[3]s

# How many replicas: one leads (leaderElection), the others wait.
replicas: %[4]s

# true: act on the custom resources of every namespace (a
# ClusterRoleBinding); false: `, op, registry, v.pullPolicy, v.replicas)
	if watch != "" {
		fmt.Fprintf(&b, `of watchNamespace only (a RoleBinding
# there).
clusterWide: false

# The namespace a namespaced operator serves (clusterWide: false).
watchNamespace: %s
`, watch)
	} else {
		b.WriteString(`of the release's namespace only, the one it
# runs in.
clusterWide: false
`)
	}
	b.WriteString(`
# What the operator's container asks of its node.
resources:
`)
	for _, l := range v.resources {
		b.WriteString("  " + l + "\n")
	}
	fmt.Fprintf(&b, `
# Leader election: with replicas over 1, one acts at a time.
leaderElection: true

metrics:
  # Serve /metrics over HTTPS on %s, to a scraper whose token may read it
  # (the ClusterRole %s-operator-metrics-reader), through the Service
  # %s-operator-metrics.
  enabled: true
`, v.metricsAddress, op, op)
	return []byte(b.String())
}

// notes is what helm prints after an install.
func notes(op, watch string) []byte {
	scope := "{{ if .Values.clusterWide }}every namespace{{ else }}namespace {{ .Release.Namespace }}{{ end }}"
	if watch != "" {
		scope = "{{ if .Values.clusterWide }}every namespace{{ else }}namespace {{ .Values.watchNamespace }}{{ end }}"
	}
	return fmt.Appendf(nil, `The %[1]s operator runs in namespace {{ .Release.Namespace }} and acts on
the custom resources of %[2]s.

  kubectl -n {{ .Release.Namespace }} rollout status deployment/%[1]s-operator

Its CRDs stay when the release is uninstalled, with every custom resource
(Helm's convention): delete them with kubectl when you mean to.
`, op, scope)
}

// write replaces dir with the chart's files.
func (c *chart) write(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	paths := make([]string, 0, len(c.files))
	for p := range c.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, c.files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}
