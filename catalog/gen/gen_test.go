package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/lib/config"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

const root = "../.."

// The Kubernetes release the deprecated-API checks look at: the project's.
const k8sVersion = "1.37"

func committedBundles(t *testing.T) []bundle {
	t.Helper()
	tmpl, err := readTemplate(filepath.Join(root, "catalog", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bundles, err := tmpl.bundles()
	if err != nil {
		t.Fatal(err)
	}
	return bundles
}

// Every bundle passes operator-framework's validators: the default bundle
// ones, OperatorHub's and the good practices. A warning must be listed, with
// its reason, in catalog/README.md.
func TestBundlesPassTheValidators(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "catalog", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	for _, b := range committedBundles(t) {
		t.Run(b.Name(), func(t *testing.T) {
			bd, err := manifests.GetBundleFromDir(filepath.Join(root, "catalog", b.Dir()))
			if err != nil {
				t.Fatal(err)
			}
			objs := append(bd.ObjectsToValidate(), map[string]string{"k8s-version": k8sVersion})
			for _, r := range validators.Validate(objs...) {
				for _, e := range r.Errors {
					t.Errorf("%s: error: %v", r.Name, e)
				}
				for _, w := range r.Warnings {
					if !strings.Contains(string(readme), w.Detail) {
						t.Errorf("%s: warning not listed in catalog/README.md: %v", r.Name, w)
					}
				}
			}
		})
	}
}

// The catalog passes what `opm validate catalog/index` checks.
func TestCatalogValidates(t *testing.T) {
	if err := config.Validate(context.Background(), os.DirFS(filepath.Join(root, "catalog", "index"))); err != nil {
		t.Fatal(err)
	}
}

// gordon's channel runs 0.1.0, 0.2.0 replacing it, then the head 0.3.0
// replacing 0.2.0 and skipping straight from any 0.1.x or 0.2.x; the CSVs
// say the same. Every other package's head replaces its 0.2.0 release.
func TestUpgradeEdges(t *testing.T) {
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(root, "catalog", "index")))
	if err != nil {
		t.Fatal(err)
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, pkg := range m {
		for _, ch := range pkg.Channels {
			head, err := ch.Head()
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Replace(head.Name, ".v0.3.0", ".v0.2.0", 1)
			if !strings.Contains(head.Name, ".v0.3.0") || head.Replaces != want {
				t.Errorf("%s/%s's head is %s replacing %q, want a 0.3.0 replacing %s", name, ch.Name, head.Name, head.Replaces, want)
			}
			if _, ok := ch.Bundles[head.Replaces]; !ok {
				t.Errorf("%s/%s lost %s: an installed one could not upgrade", name, ch.Name, head.Replaces)
			}
		}
	}
	pkg := m["gordon"]
	if pkg == nil {
		t.Fatal("the catalog has no gordon package")
	}
	head, err := pkg.DefaultChannel.Head()
	if err != nil {
		t.Fatal(err)
	}
	if head.SkipRange != ">=0.1.0 <0.3.0" {
		t.Errorf("gordon's head skips %q, want >=0.1.0 <0.3.0", head.SkipRange)
	}
	if b := pkg.DefaultChannel.Bundles["gordon.v0.2.0"]; b == nil || b.Replaces != "gordon.v0.1.0" {
		t.Errorf("gordon.v0.2.0 = %+v, want it replacing gordon.v0.1.0", b)
	}
	csv := readCSV(t, bundle{Package: "gordon", Version: head.Version})
	if csv.Spec.Replaces != "gordon.v0.2.0" || csv.Annotations["olm.skipRange"] != head.SkipRange {
		t.Errorf("gordon.v0.3.0's CSV replaces %q and skips %q", csv.Spec.Replaces, csv.Annotations["olm.skipRange"])
	}
	for _, b := range cfg.Bundles {
		if want := DefaultRegistry + "/" + b.Package + "-bundle:v"; !strings.HasPrefix(b.Image, want) {
			t.Errorf("bundle %s has image %q, want %s...", b.Name, b.Image, want)
		}
	}
}

func readCSV(t *testing.T, b bundle) *v1alpha1.ClusterServiceVersion {
	t.Helper()
	var csv v1alpha1.ClusterServiceVersion
	file := filepath.Join(root, "catalog", b.Dir(), "manifests", b.Package+".clusterserviceversion.yaml")
	if err := readYAML(file, "ClusterServiceVersion", &csv); err != nil {
		t.Fatal(err)
	}
	return &csv
}

// A CSV grants the operator the rules controller-gen generated from its
// code, and cluster-wide the metrics filter's two reviews, nothing else; its Deployment watches what the OperatorGroup
// targets and holds its lease in its own namespace.
func TestCSVRunsTheOperatorWithItsGeneratedRules(t *testing.T) {
	src := sources{root: root}
	release := currentRelease(t)
	for _, b := range committedBundles(t) {
		if !generated(b, release) {
			continue
		}
		t.Run(b.Name(), func(t *testing.T) {
			csv := readCSV(t, b)
			rules, err := src.rules(b.Package)
			if err != nil {
				t.Fatal(err)
			}
			strategy := csv.Spec.InstallStrategy.StrategySpec
			// Cluster-wide, only what --metrics-secure asks: a TokenReview
			// and a SubjectAccessReview for each scrape.
			metrics := []rbacv1.PolicyRule{
				{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
				{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
			}
			if cp := strategy.ClusterPermissions; len(cp) != 1 || !slices.EqualFunc(cp[0].Rules, metrics, ruleEqual) {
				t.Errorf("cluster permissions %v, want the metrics filter's %v only", cp, metrics)
			}
			if len(strategy.Permissions) != 1 || !slices.EqualFunc(strategy.Permissions[0].Rules, rules, ruleEqual) {
				t.Errorf("permissions %v, want the generated roles' %v", strategy.Permissions, rules)
			}
			for _, p := range strategy.Permissions {
				for _, r := range p.Rules {
					if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
						t.Errorf("wildcard rule %v", r)
					}
				}
			}
			d := strategy.DeploymentSpecs[0]
			if p := strategy.Permissions[0].ServiceAccountName; p != d.Spec.Template.Spec.ServiceAccountName {
				t.Errorf("permissions for ServiceAccount %s, the Deployment runs as %s", p, d.Spec.Template.Spec.ServiceAccountName)
			}
			// Its image: TestBundlesAreWhatOLMReads.
			c := d.Spec.Template.Spec.Containers[0]
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--leader-election-namespace") {
					t.Errorf("arg %s: under OLM the lease is in the operator's own namespace", a)
				}
			}
			watch := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "WATCH_NAMESPACE" })
			all := supported(csv, v1alpha1.InstallModeTypeAllNamespaces)
			own := supported(csv, v1alpha1.InstallModeTypeOwnNamespace)
			switch {
			case b.ClusterWide():
				if !slices.Contains(c.Args, "--cluster-wide") || watch >= 0 || !all || own {
					t.Errorf("the cluster-wide bundle: args %v, WATCH_NAMESPACE at %d, AllNamespaces %t, OwnNamespace %t", c.Args, watch, all, own)
				}
			default:
				if watch < 0 || c.Env[watch].ValueFrom == nil || c.Env[watch].ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
					t.Errorf("WATCH_NAMESPACE is not the OperatorGroup's target namespaces: %v", c.Env)
				}
				if slices.Contains(c.Args, "--cluster-wide") || !own {
					t.Errorf("a namespaced bundle: args %v, OwnNamespace %t", c.Args, own)
				}
			}
		})
	}
}

func supported(csv *v1alpha1.ClusterServiceVersion, mode v1alpha1.InstallModeType) bool {
	for _, m := range csv.Spec.InstallModes {
		if m.Type == mode {
			return m.Supported
		}
	}
	return false
}

func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.ResourceNames, b.ResourceNames)
}

func currentRelease(t *testing.T) string {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(root, "catalog", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}

// Only the current release's bundles are generated; a released one is
// never rewritten.
func TestReleasedBundlesAreNotRegenerated(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"template.yaml", "VERSION"} {
		data, err := os.ReadFile(filepath.Join(root, "catalog", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "catalog", f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"operators", "crds"} {
		if err := os.Symlink(mustAbs(t, filepath.Join(root, sub)), filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(mustAbs(t, filepath.Join(root, "catalog", "bases")), filepath.Join(dir, "catalog", "bases")); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"-root", dir, "-platforms", "linux/amd64", "bundle"}); err != nil {
		t.Fatal(err)
	}
	release := currentRelease(t)
	bundles := committedBundles(t)
	for _, b := range bundles {
		_, err := os.Stat(filepath.Join(dir, "catalog", b.Dir()))
		if generated(b, release) && err != nil {
			t.Errorf("%s was not generated: %v", b.Name(), err)
		}
		if !generated(b, release) && err == nil {
			t.Errorf("released bundle %s was written", b.Name())
		}
	}
	// What the generator writes is what is committed.
	for _, b := range bundles {
		if !generated(b, release) {
			continue
		}
		want := readCSV(t, b)
		var got v1alpha1.ClusterServiceVersion
		file := filepath.Join(dir, "catalog", b.Dir(), "manifests", b.Package+".clusterserviceversion.yaml")
		if err := readYAML(file, "ClusterServiceVersion", &got); err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || got.Spec.Version.String() != want.Spec.Version.String() {
			t.Errorf("generated %s %s, committed %s %s: run make bundle", got.Name, got.Spec.Version, want.Name, want.Spec.Version)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The registry is a parameter: bundles and catalog name images in it.
func TestRegistryIsAParameter(t *testing.T) {
	tmpl, err := readTemplate(filepath.Join(root, "catalog", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const reg = "registry.example.com/me"
	cfg, err := tmpl.render(context.Background(), filepath.Join(root, "catalog"), reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Bundles) != len(committedBundles(t)) {
		t.Fatalf("rendered %d bundles, the template has %d", len(cfg.Bundles), len(committedBundles(t)))
	}
	for _, b := range cfg.Bundles {
		if !strings.HasPrefix(b.Image, reg+"/") {
			t.Errorf("bundle %s: image %s", b.Name, b.Image)
		}
	}
	b := bundle{Package: "gordon", Version: committedBundles(t)[0].Version}
	if img := operatorImage(reg, b); !strings.HasPrefix(img, reg+"/gordon-operator:v") {
		t.Errorf("operator image %s", img)
	}
}

// A template that names a bundle no channel lists, or a channel entry with
// no bundle, is refused.
func TestTemplateMistakesAreRefused(t *testing.T) {
	for name, tc := range map[string]string{
		"bundle in no channel": `schema: olm.template.basic
entries:
- {schema: olm.package, name: gordon, defaultChannel: alpha}
- {schema: olm.channel, package: gordon, name: alpha, entries: [{name: gordon.v0.2.0}]}
- {schema: olm.bundle, image: r/gordon-bundle:v0.2.0}
- {schema: olm.bundle, image: r/gordon-bundle:v0.3.0}
`,
		"entry without bundle": `schema: olm.template.basic
entries:
- {schema: olm.package, name: gordon, defaultChannel: alpha}
- {schema: olm.channel, package: gordon, name: alpha, entries: [{name: gordon.v0.2.0}, {name: gordon.v0.3.0, replaces: gordon.v0.2.0}]}
- {schema: olm.bundle, image: r/gordon-bundle:v0.2.0}
`,
		"image not named after its package": `schema: olm.template.basic
entries:
- {schema: olm.package, name: gordon, defaultChannel: alpha}
- {schema: olm.channel, package: gordon, name: alpha, entries: [{name: gordon.v0.2.0}]}
- {schema: olm.bundle, image: r/gordon:v0.2.0}
`,
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "template.yaml")
			if err := os.WriteFile(file, []byte(tc), 0o644); err != nil {
				t.Fatal(err)
			}
			tmpl, err := readTemplate(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tmpl.bundles(); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// A release's bundles (make release: gen -out -image -created-at bundle) name
// the operator's image by digest in the Deployment, containerImage and
// relatedImages, carry createdAt and keep the template's olm.skipRange; the
// committed bundles carry no createdAt, which would change at every
// generation.
func TestReleaseBundlesNameTheImageByDigest(t *testing.T) {
	out := t.TempDir()
	const digest = "ghcr.io/operator-workshops/gordon-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	args := []string{"-root", root, "-out", out, "-image", "gordon=" + digest, "-created-at", "2026-11-26T12:00:00Z", "-platforms", "linux/amd64,linux/arm64", "bundle"}
	if err := run(context.Background(), args); err != nil {
		t.Fatal(err)
	}
	release := currentRelease(t)
	for _, b := range committedBundles(t) {
		if !generated(b, release) {
			continue
		}
		var csv v1alpha1.ClusterServiceVersion
		file := filepath.Join(out, b.Dir(), "manifests", b.Package+".clusterserviceversion.yaml")
		if err := readYAML(file, "ClusterServiceVersion", &csv); err != nil {
			t.Fatal(err)
		}
		if csv.Annotations["createdAt"] != "2026-11-26T12:00:00Z" {
			t.Errorf("%s: createdAt %q", b.Name(), csv.Annotations["createdAt"])
		}
		if committed := readCSV(t, b); committed.Annotations["createdAt"] != "" || committed.Annotations["olm.skipRange"] != csv.Annotations["olm.skipRange"] {
			t.Errorf("%s: committed createdAt %q and skipRange %q, release's skipRange %q", b.Name(),
				committed.Annotations["createdAt"], committed.Annotations["olm.skipRange"], csv.Annotations["olm.skipRange"])
		}
		if b.Package != "gordon" {
			continue
		}
		if csv.Annotations["olm.skipRange"] != ">=0.1.0 <0.3.0" {
			t.Errorf("%s: olm.skipRange %q, want the template's", b.Name(), csv.Annotations["olm.skipRange"])
		}
		spec := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec
		if got := spec.Template.Spec.Containers[0].Image; got != digest || csv.Annotations["containerImage"] != digest || csv.Spec.RelatedImages[0].Image != digest {
			t.Errorf("%s runs %s, containerImage %s, relatedImages %v; want %s", b.Name(), got, csv.Annotations["containerImage"], csv.Spec.RelatedImages, digest)
		}
	}
	for _, bad := range [][]string{{"-image", "gordon=ghcr.io/x:v1", "bundle"}, {"-created-at", "yesterday", "bundle"}, {"bundle"}, {"-platforms", "amd64", "bundle"}} {
		if err := run(context.Background(), append([]string{"-root", root, "-out", t.TempDir()}, bad...)); err == nil {
			t.Errorf("gen %v succeeded", bad)
		}
	}
}
