package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// A bundle is one version of one package, as the template names it.
type bundle struct {
	Package string
	// Version is the CSV's version: the release, with "-clusterwide" for
	// the etcd operator's cluster-wide variant.
	Version semver.Version
	// Channels are the channels whose entries list it; Default the one of
	// them its metadata names as default.
	Channels []string
	Default  string
	// Replaces is the bundle it upgrades from in its channels ("" for none).
	Replaces string
	// SkipRange is the versions it upgrades from directly, skipping those
	// between ("" for none): the olm.skipRange of its channel entries.
	SkipRange string
}

// Name is the CSV's name, as OLM and the channels know it.
func (b bundle) Name() string { return b.Package + ".v" + b.Version.String() }

// Dir is where the bundle lives, relative to catalog/.
func (b bundle) Dir() string { return filepath.Join("bundles", b.Package, b.Version.String()) }

// Release is the version without its variant.
func (b bundle) Release() string {
	return fmt.Sprintf("%d.%d.%d", b.Version.Major, b.Version.Minor, b.Version.Patch)
}

// ClusterWide reports the etcd operator's cluster-wide variant.
func (b bundle) ClusterWide() bool {
	return slices.Contains(b.Version.Pre, semver.PRVersion{VersionStr: "clusterwide"})
}

// operatorImage is the image of the operator a bundle runs.
func operatorImage(registry string, b bundle) string {
	return fmt.Sprintf("%s/%s-operator:v%s", registry, b.Package, b.Release())
}

// bundleImage is the image that carries a bundle.
func bundleImage(registry string, b bundle) string {
	return fmt.Sprintf("%s/%s-bundle:v%s", registry, b.Package, b.Version)
}

// operandImages are the images an operator runs by default, for the CSV's
// relatedImages (what a disconnected cluster must mirror).
var operandImages = map[string][]string{
	"database":     {"mongo:4.0", "mysql:8.0"},
	"mysql-backup": {"mysql:5.7", "mysql:8.0"},
	"etcd-cluster": {"quay.io/coreos/etcd:v3.2.13"},
	"gordon":       {"prgcont/gordon:v1.0"},
}

// sources are the files of the tree a bundle is generated from, and what a
// release adds to them.
type sources struct {
	root string // the repository
	// images name each package's operator image as a release built it (by
	// digest), in place of its tag.
	images map[string]string
	// createdAt is the CSV's createdAt annotation, a release's time ("" in
	// the committed bundles, which the tree regenerates identically).
	createdAt string
	// platforms are the os/arch pairs the operator images are built for
	// (make release's PLATFORMS), which the CSV's
	// operatorframework.io/os.* and arch.* labels say it supports.
	platforms []string
}

// operatorImage is the image of the operator bundle b runs: by tag, or as
// the release names it.
func (s sources) operatorImage(registry string, b bundle) string {
	if ref, ok := s.images[b.Package]; ok {
		return ref
	}
	return operatorImage(registry, b)
}

func (s sources) path(parts ...string) string {
	return filepath.Join(append([]string{s.root}, parts...)...)
}

// documents reads the objects of a YAML file that may hold several,
// leaving out empty documents.
func documents(path string) ([]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []json.RawMessage
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(raw) > 0 && string(raw) != "null" {
			docs = append(docs, raw)
		}
	}
}

// kindOf is a document's kind.
func kindOf(raw json.RawMessage) (string, error) {
	var meta struct{ Kind string }
	err := json.Unmarshal(raw, &meta)
	return meta.Kind, err
}

// readYAML decodes into out the object of the given kind in a YAML file that
// may hold several.
func readYAML(path, kind string, out any) error {
	docs, err := documents(path)
	if err != nil {
		return err
	}
	for _, raw := range docs {
		k, err := kindOf(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if k == kind {
			return json.Unmarshal(raw, out)
		}
	}
	return fmt.Errorf("%s holds no %s", path, kind)
}

// csv builds bundle b's ClusterServiceVersion from the package's base and the
// operator's manifests.
func (s sources) csv(registry string, b bundle) (*v1alpha1.ClusterServiceVersion, map[string][]byte, error) {
	var csv v1alpha1.ClusterServiceVersion
	if err := readYAML(s.path("catalog", "bases", b.Package+".clusterserviceversion.yaml"), "ClusterServiceVersion", &csv); err != nil {
		return nil, nil, err
	}
	var deploy appsv1.Deployment
	if err := readYAML(s.path("operators", b.Package, "config", "manager", "manager.yaml"), "Deployment", &deploy); err != nil {
		return nil, nil, err
	}
	rules, err := s.rules(b.Package)
	if err != nil {
		return nil, nil, err
	}
	var metricsAuth rbacv1.ClusterRole
	if err := readYAML(s.path("operators", b.Package, "config", "rbac", "metrics_auth_role.yaml"), "ClusterRole", &metricsAuth); err != nil {
		return nil, nil, err
	}
	icon, err := os.ReadFile(s.path("catalog", "bases", "icon.svg"))
	if err != nil {
		return nil, nil, err
	}

	image := s.operatorImage(registry, b)
	csv.Name = b.Name()
	csv.Spec.Version = version.OperatorVersion{Version: b.Version}
	csv.Spec.Replaces = b.Replaces
	csv.Spec.Icon = []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(icon), MediaType: "image/svg+xml"}}
	csv.Annotations["containerImage"] = image
	labels, err := platformLabels(s.platforms)
	if err != nil {
		return nil, nil, err
	}
	csv.Labels = labels
	if b.SkipRange != "" {
		r, err := semver.ParseRange(b.SkipRange)
		if err != nil {
			return nil, nil, fmt.Errorf("olm.skipRange %q: %w", b.SkipRange, err)
		}
		if r(b.Version) {
			return nil, nil, fmt.Errorf("olm.skipRange %q holds the bundle's own version", b.SkipRange)
		}
		csv.Annotations["olm.skipRange"] = b.SkipRange
	}
	if s.createdAt != "" {
		csv.Annotations["createdAt"] = s.createdAt
	}
	if b.ClusterWide() {
		csv.Spec.DisplayName += " (cluster-wide)"
		csv.Spec.InstallModes = []v1alpha1.InstallMode{
			{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: false},
			{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: false},
			{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
			{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
		}
	}

	crds, err := s.ownedCRDs(&csv)
	if err != nil {
		return nil, nil, err
	}
	examples, err := s.examples(b.Package)
	if err != nil {
		return nil, nil, err
	}
	csv.Annotations["alm-examples"] = examples

	spec, err := olmDeployment(&deploy, image, b.ClusterWide())
	if err != nil {
		return nil, nil, err
	}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{
		StrategyName: v1alpha1.InstallStrategyNameDeployment,
		StrategySpec: v1alpha1.StrategyDetailsDeployment{
			DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{{Name: deploy.Name, Label: deploy.Labels, Spec: spec}},
			// The operator's rules are namespaced: OLM grants them in the
			// operator's namespace and the target namespaces, as
			// ClusterRoles for AllNamespaces.
			Permissions: []v1alpha1.StrategyDeploymentPermissions{{
				ServiceAccountName: deploy.Spec.Template.Spec.ServiceAccountName,
				Rules:              rules,
			}},
			// --metrics-secure asks the API server about each scraper's
			// token: TokenReviews and SubjectAccessReviews are cluster-wide.
			ClusterPermissions: []v1alpha1.StrategyDeploymentPermissions{{
				ServiceAccountName: deploy.Spec.Template.Spec.ServiceAccountName,
				Rules:              metricsAuth.Rules,
			}},
		},
	}
	csv.Spec.RelatedImages = []v1alpha1.RelatedImage{{Name: "operator", Image: image}}
	for i, img := range operandImages[b.Package] {
		csv.Spec.RelatedImages = append(csv.Spec.RelatedImages, v1alpha1.RelatedImage{Name: fmt.Sprintf("operand-%d", i+1), Image: img})
	}
	return &csv, crds, nil
}

// platformLabels are the CSV labels by which OLM and OperatorHub filter
// operators by platform: operatorframework.io/os.OS and arch.ARCH,
// "supported", for each os/arch pair (without them, OLM assumes
// linux/amd64 only).
func platformLabels(platforms []string) (map[string]string, error) {
	if len(platforms) == 0 {
		return nil, errors.New("no platforms: say which the operator images are built for (-platforms linux/amd64,linux/arm64)")
	}
	labels := map[string]string{}
	for _, p := range platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want OS/ARCH, such as linux/arm64", p)
		}
		labels["operatorframework.io/os."+goos] = "supported"
		labels["operatorframework.io/arch."+arch] = "supported"
	}
	return labels, nil
}

// metricsObjects are the objects a bundle ships beside its CSV, by file
// name: the Service a Prometheus scrapes the operator's metrics through
// (OLM makes it in the operator's namespace) and the ClusterRole that
// grants reading them, both as config/ has them for make deploy.
func (s sources) metricsObjects(pkg string) (map[string]any, error) {
	var svc corev1.Service
	if err := readYAML(s.path("operators", pkg, "config", "manager", "metrics_service.yaml"), "Service", &svc); err != nil {
		return nil, err
	}
	// OLM places the bundle's namespaced objects in the namespace it
	// installs the operator in.
	svc.Namespace = ""
	var reader rbacv1.ClusterRole
	if err := readYAML(s.path("operators", pkg, "config", "rbac", "metrics_reader_role.yaml"), "ClusterRole", &reader); err != nil {
		return nil, err
	}
	return map[string]any{
		svc.Name + "_v1_service.yaml":                                  &svc,
		reader.Name + "_rbac.authorization.k8s.io_v1_clusterrole.yaml": &reader,
	}, nil
}

// rules are what package pkg's generated RBAC grants: its ClusterRole's
// rules (its work) and its Role's (leader election's, which config/ grants
// in the operator's own namespace only).
func (s sources) rules(pkg string) ([]rbacv1.PolicyRule, error) {
	path := s.path("operators", pkg, "config", "rbac", "role.yaml")
	var work rbacv1.ClusterRole
	if err := readYAML(path, "ClusterRole", &work); err != nil {
		return nil, err
	}
	var leader rbacv1.Role
	if err := readYAML(path, "Role", &leader); err != nil {
		return nil, err
	}
	return append(work.Rules, leader.Rules...), nil
}

// ownedCRDs reads the CRDs the base CSV owns from crds/, as they are, and
// completes the CSV's descriptions of them from their schemas. It returns
// each CRD's file name and content.
func (s sources) ownedCRDs(csv *v1alpha1.ClusterServiceVersion) (map[string][]byte, error) {
	crds := map[string][]byte{}
	for i, owned := range csv.Spec.CustomResourceDefinitions.Owned {
		plural, group, ok := strings.Cut(owned.Name, ".")
		if !ok {
			return nil, fmt.Errorf("owned CRD %q is not <plural>.<group>", owned.Name)
		}
		file := group + "_" + plural + ".yaml"
		raw, err := os.ReadFile(s.path("crds", file))
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096).Decode(crd); err != nil {
			return nil, fmt.Errorf("crds/%s: %w", file, err)
		}
		if crd.Spec.Names.Kind != owned.Kind {
			return nil, fmt.Errorf("CRD %s is of kind %s, the base CSV says %s", owned.Name, crd.Spec.Names.Kind, owned.Kind)
		}
		var served *apiextensionsv1.CustomResourceDefinitionVersion
		for j := range crd.Spec.Versions {
			if crd.Spec.Versions[j].Name == owned.Version {
				served = &crd.Spec.Versions[j]
			}
		}
		if served == nil || served.Schema == nil || served.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s has no version %s with a schema", owned.Name, owned.Version)
		}
		csv.Spec.CustomResourceDefinitions.Owned[i].Description = firstSentence(served.Schema.OpenAPIV3Schema.Description)
		crds[file] = raw
	}
	return crds, nil
}

// firstSentence is the first sentence of a type's documentation, for the
// CSV's one-line descriptions.
func firstSentence(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

// examples is alm-examples: the operator's samples, as a JSON array, without
// their Secrets (a CSV example is a CR).
func (s sources) examples(pkg string) (string, error) {
	files, err := filepath.Glob(s.path("operators", pkg, "config", "samples", "*.yaml"))
	if err != nil {
		return "", err
	}
	slices.Sort(files)
	var out []json.RawMessage
	for _, f := range files {
		docs, err := documents(f)
		if err != nil {
			return "", err
		}
		for _, raw := range docs {
			kind, err := kindOf(raw)
			if err != nil {
				return "", fmt.Errorf("%s: %w", f, err)
			}
			if kind != "Secret" {
				out = append(out, raw)
			}
		}
	}
	if len(out) == 0 {
		return "", fmt.Errorf("operators/%s/config/samples holds no example", pkg)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	return string(data), err
}

// olmDeployment is the operator's Deployment as OLM runs it: the bundle's
// image, the namespaces to watch from the OperatorGroup (OLM annotates the
// pod with them), the lease in the operator's own namespace.
func olmDeployment(deploy *appsv1.Deployment, image string, clusterWide bool) (appsv1.DeploymentSpec, error) {
	spec := *deploy.Spec.DeepCopy()
	if len(spec.Template.Spec.Containers) != 1 {
		return spec, fmt.Errorf("deployment %s: want one container, have %d", deploy.Name, len(spec.Template.Spec.Containers))
	}
	c := &spec.Template.Spec.Containers[0]
	c.Image = image
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--leader-election-namespace=") })
	if clusterWide {
		c.Args = append(c.Args, "--cluster-wide")
		return spec, nil
	}
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "WATCH_NAMESPACE" })
	c.Env = append(c.Env, corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"},
	}})
	return spec, nil
}

// annotations is the bundle's metadata/annotations.yaml.
func annotations(b bundle) map[string]map[string]string {
	return map[string]map[string]string{"annotations": bundleLabels(b)}
}

// bundleLabels are the bundle image's labels, the same as its annotations.
func bundleLabels(b bundle) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         b.Package,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(b.Channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": b.Default,
	}
}

// dockerfile builds the bundle image, for people with Docker:
// docker build -f bundle.Dockerfile -t IMAGE catalog/bundles/<package>/<version>.
func dockerfile(b bundle) string {
	labels := bundleLabels(b)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var w strings.Builder
	w.WriteString("# Generated by make bundle: the bundle image of " + b.Name() + ".\n")
	w.WriteString("# docker build -f bundle.Dockerfile -t IMAGE .\n")
	w.WriteString("FROM scratch\n")
	for _, k := range keys {
		fmt.Fprintf(&w, "LABEL %s=%s\n", k, labels[k])
	}
	w.WriteString("COPY manifests /manifests/\nCOPY metadata /metadata/\n")
	return w.String()
}

// writeBundle writes bundle b under dir: manifests/, metadata/ and
// bundle.Dockerfile, replacing what was there.
func (s sources) writeBundle(dir, registry string, b bundle) error {
	csv, crds, err := s.csv(registry, b)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", b.Name(), err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for file, raw := range crds {
		if err := writeFile(filepath.Join(dir, "manifests", file), raw); err != nil {
			return err
		}
	}
	files := map[string]any{
		filepath.Join("manifests", b.Package+".clusterserviceversion.yaml"): csv,
		filepath.Join("metadata", "annotations.yaml"):                       annotations(b),
	}
	metrics, err := s.metricsObjects(b.Package)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", b.Name(), err)
	}
	for file, obj := range metrics {
		files[filepath.Join("manifests", file)] = obj
	}
	for name, obj := range files {
		data, err := marshal(obj)
		if err != nil {
			return fmt.Errorf("bundle %s: %s: %w", b.Name(), name, err)
		}
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, "bundle.Dockerfile"), []byte(dockerfile(b)))
}

// marshal writes obj as YAML without the empty status and the null
// creationTimestamps that the Kubernetes types always carry.
func marshal(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	dropNullTimestamps(m)
	return sigsyaml.Marshal(m)
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if t, ok := v["creationTimestamp"]; ok && t == nil {
			delete(v, "creationTimestamp")
		}
		for _, e := range v {
			dropNullTimestamps(e)
		}
	case []any:
		for _, e := range v {
			dropNullTimestamps(e)
		}
	}
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
