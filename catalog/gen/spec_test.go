package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// What each package's bundles must say, written from what the project
// promises (the mission's CRs and install modes) and from OLM's registry+v1
// format, not read from the generator: a generator that wrote the wrong
// thing everywhere would pass a test that asks it what to expect.
var wantPackages = map[string]struct {
	crd, kind, version string // the one CRD a bundle owns
	channel            string // and the channel it is in
	// The install modes a bundle supports: OwnNamespace, SingleNamespace,
	// MultiNamespace, AllNamespaces.
	modes, clusterWideModes [4]bool
	clusterWideChannel      string
}{
	"database":     {crd: "databases.zalando.org", kind: "Database", version: "v1", channel: "alpha", modes: [4]bool{true, true, true, true}},
	"mysql-backup": {crd: "mysqls.otus.homework", kind: "MySQL", version: "v1", channel: "alpha", modes: [4]bool{true, true, true, true}},
	// Namespaced by default (its own namespace or another one), or a
	// bundle of its own for the whole cluster, in the channels the etcd
	// operator had on OperatorHub.
	"etcd-cluster": {crd: "etcdclusters.etcd.database.coreos.com", kind: "EtcdCluster", version: "v1beta2",
		channel: "singlenamespace-alpha", modes: [4]bool{true, true, false, false},
		clusterWideChannel: "clusterwide-alpha", clusterWideModes: [4]bool{false, false, false, true}},
	"gordon": {crd: "gordons.operator.prgcont.cz", kind: "Gordon", version: "v1", channel: "alpha", modes: [4]bool{true, true, true, true}},
}

// The registry+v1 format's annotations (metadata/annotations.yaml), which the
// bundle image carries as labels too.
func wantAnnotations(pkg, channel string) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         pkg,
		"operators.operatorframework.io.bundle.channels.v1":        channel,
		"operators.operatorframework.io.bundle.channel.default.v1": channel,
	}
}

// Every committed bundle directory, catalog/bundles/<package>/<version>, is
// a bundle as OLM reads it: its annotations, the same labels on its image,
// one CSV named <package>.v<version> that installs the operator's image of
// that release by a Deployment, in the install modes the package promises,
// and owns the CRD the manifests carry.
func TestBundlesAreWhatOLMReads(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(root, "catalog", "bundles", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, dir := range dirs {
		pkg, version := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		seen[pkg]++
		t.Run(pkg+"/"+version, func(t *testing.T) {
			want, ok := wantPackages[pkg]
			if !ok {
				t.Fatalf("a bundle of package %s, which the project does not have", pkg)
			}
			release, clusterWide := strings.CutSuffix(version, "-clusterwide")
			modes, channel := want.modes, want.channel
			if clusterWide {
				modes, channel = want.clusterWideModes, want.clusterWideChannel
			}

			var meta struct{ Annotations map[string]string }
			readFile(t, filepath.Join(dir, "metadata", "annotations.yaml"), &meta)
			if !maps.Equal(meta.Annotations, wantAnnotations(pkg, channel)) {
				t.Errorf("metadata/annotations.yaml: %v, want %v", meta.Annotations, wantAnnotations(pkg, channel))
			}
			dockerfile, err := os.ReadFile(filepath.Join(dir, "bundle.Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range wantAnnotations(pkg, channel) {
				if label := "LABEL " + k + "=" + v + "\n"; !strings.Contains(string(dockerfile), label) {
					t.Errorf("bundle.Dockerfile lacks %q", strings.TrimSpace(label))
				}
			}
			for _, copied := range []string{"COPY manifests /manifests/\n", "COPY metadata /metadata/\n"} {
				if !strings.Contains(string(dockerfile), copied) {
					t.Errorf("bundle.Dockerfile lacks %q", strings.TrimSpace(copied))
				}
			}

			files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var csvs []v1alpha1.ClusterServiceVersion
			var crds []apiextensionsv1.CustomResourceDefinition
			var services []corev1.Service
			var roles []rbacv1.ClusterRole
			for _, f := range files {
				var obj struct{ Kind string }
				readFile(t, f, &obj)
				switch obj.Kind {
				case "ClusterServiceVersion":
					var csv v1alpha1.ClusterServiceVersion
					readFile(t, f, &csv)
					csvs = append(csvs, csv)
				case "CustomResourceDefinition":
					var crd apiextensionsv1.CustomResourceDefinition
					readFile(t, f, &crd)
					crds = append(crds, crd)
				case "Service":
					var svc corev1.Service
					readFile(t, f, &svc)
					services = append(services, svc)
				case "ClusterRole":
					var role rbacv1.ClusterRole
					readFile(t, f, &role)
					roles = append(roles, role)
				}
			}
			if len(csvs) != 1 || len(crds) != 1 {
				t.Fatalf("manifests/ holds %d CSVs and %d CRDs, want one of each", len(csvs), len(crds))
			}
			csv, crd := csvs[0], crds[0]

			if name := pkg + ".v" + version; csv.Name != name || csv.Spec.Version.String() != version {
				t.Errorf("CSV %s of version %s, want %s of version %s", csv.Name, csv.Spec.Version.String(), name, version)
			}
			image := fmt.Sprintf("ghcr.io/operator-workshops/%s-operator:v%s", pkg, release)
			if csv.Annotations["containerImage"] != image {
				t.Errorf("containerImage %q, want %s", csv.Annotations["containerImage"], image)
			}
			if s := csv.Spec.InstallStrategy; s.StrategyName != "deployment" || len(s.StrategySpec.DeploymentSpecs) != 1 {
				t.Errorf("install strategy %q with %d Deployments, want deployment with one", s.StrategyName, len(s.StrategySpec.DeploymentSpecs))
			} else if c := s.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers; len(c) != 1 || c[0].Image != image {
				images := make([]string, len(c))
				for i := range c {
					images[i] = c[i].Image
				}
				t.Errorf("the Deployment's containers run %v, want one running %s", images, image)
			}
			var got [4]bool
			types := []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace,
				v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces}
			for i, typ := range types {
				n := slices.IndexFunc(csv.Spec.InstallModes, func(m v1alpha1.InstallMode) bool { return m.Type == typ })
				if n < 0 {
					t.Errorf("install mode %s not listed: OLM requires all four", typ)
					continue
				}
				got[i] = csv.Spec.InstallModes[n].Supported
			}
			if len(csv.Spec.InstallModes) != 4 || got != modes {
				t.Errorf("install modes %v, want %v supported (Own, Single, Multi, All)", csv.Spec.InstallModes, modes)
			}

			if crd.Name != want.crd || crd.Spec.Names.Kind != want.kind {
				t.Errorf("the CRD is %s of kind %s, want %s of kind %s", crd.Name, crd.Spec.Names.Kind, want.crd, want.kind)
			}
			served := slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
				return v.Name == want.version && v.Served && v.Storage
			})
			if !served {
				t.Errorf("the CRD does not serve and store %s", want.version)
			}
			owned := csv.Spec.CustomResourceDefinitions.Owned
			if len(owned) != 1 || owned[0].Name != want.crd || owned[0].Kind != want.kind || owned[0].Version != want.version {
				t.Errorf("the CSV owns %+v, want %s (%s %s) alone", owned, want.crd, want.kind, want.version)
			}
			if release != currentRelease(t) {
				return // released before the bundles said their platforms and shipped their metrics objects
			}
			if !maps.Equal(csv.Labels, wantPlatformLabels) {
				t.Errorf("the CSV's labels %v, want the platforms make release builds images for, %v", csv.Labels, wantPlatformLabels)
			}
			checkMetricsObjects(t, csv, services, roles)
		})
	}
	for pkg := range wantPackages {
		if seen[pkg] == 0 {
			t.Errorf("no bundle of package %s", pkg)
		}
	}
}

// The platforms a release's operator images are built for (linux/amd64 and
// linux/arm64, README's Install), as OLM's platform labels: without them
// OLM and OperatorHub take an operator for linux/amd64 only.
var wantPlatformLabels = map[string]string{
	"operatorframework.io/os.linux":   "supported",
	"operatorframework.io/arch.amd64": "supported",
	"operatorframework.io/arch.arm64": "supported",
}

// TestPlatformLabelsAreTheReleases: the labels above are what make
// release's PLATFORMS builds, so that a platform added there is said in the
// bundles too.
func TestPlatformLabelsAreTheReleases(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PLATFORMS \?= (.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no PLATFORMS ?=")
	}
	got, err := platformLabels(strings.Split(string(m[1]), ","))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, wantPlatformLabels) {
		t.Errorf("make release builds %s, labelled %v; the bundles are checked for %v", m[1], got, wantPlatformLabels)
	}
	for _, bad := range [][]string{nil, {""}, {"amd64"}, {"linux/"}, {"/arm64"}, {"linux/arm/v7/x"}} {
		if _, err := platformLabels(bad); err == nil {
			t.Errorf("platformLabels(%q) took it", bad)
		}
	}
}

// checkMetricsObjects checks that a bundle ships what a Prometheus needs to
// scrape the operator OLM installs: one Service that selects the pods of
// the CSV's Deployment on the port its container names for metrics, and
// one ClusterRole that grants reading /metrics, nothing else.
func checkMetricsObjects(t *testing.T, csv v1alpha1.ClusterServiceVersion, services []corev1.Service, roles []rbacv1.ClusterRole) {
	t.Helper()
	if len(services) != 1 || len(roles) != 1 {
		t.Fatalf("manifests/ holds %d Services and %d ClusterRoles, want the metrics Service and the metrics reader's role", len(services), len(roles))
	}
	svc, role := services[0], roles[0]
	pod := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		t.Errorf("the Service selects %v, which the operator's pods (%v) do not match", svc.Spec.Selector, pod.Labels)
	}
	if svc.Namespace != "" {
		t.Errorf("the Service names namespace %s: OLM makes it in the operator's", svc.Namespace)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("the Service's ports %+v, want 8443 to the container's metrics port", svc.Spec.Ports)
	}
	ports := pod.Spec.Containers[0].Ports
	if !slices.ContainsFunc(ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8443 }) {
		t.Errorf("the operator's container has ports %+v, none named metrics on 8443", ports)
	}
	want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if !slices.EqualFunc(role.Rules, want, ruleEqual) {
		t.Errorf("the ClusterRole %s grants %+v, want reading /metrics only", role.Name, role.Rules)
	}
}

func readFile(t *testing.T, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
