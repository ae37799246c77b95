// Package deploy installs the operators as a cluster admin does without
// OLM, on a cluster of its own ("deploy"): a local one with the machine's
// real node, or with E2E_PROVIDER=kind a kind cluster. On the fresh cluster,
// make release's manifests (each operator's config/default, namespaced:
// database, gordon and mysql-backup serve namespace default, the etcd
// operator its own namespace etc; and the etcd operator's config/cluster-wide
// beside it) install each operator as a pod of its released image, by
// digest, built without a daemon, under its own ServiceAccount and generated
// RBAC. Then a CR of each kind becomes Ready through them and is deleted, a
// CR outside the namespaced operators' namespace stays untouched, and no
// request of theirs was refused; make deploy builds the same images and
// changes nothing; the other three operators switched to config/cluster-wide
// by make deploy serve another namespace; make deploy upgrades the
// mysql-backup operator of the previous release (catalog/RELEASES) with a
// MySQL's data kept; make uninstall deletes the CRDs; and last, gordon's
// Helm chart from the release is installed, upgraded and uninstalled.
package deploy

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

var (
	testEnv env.Environment
	suite   *cluster.Suite
	// skip is why the operators cannot be deployed here; empty when they can.
	skip string
	// dist is where make release writes the release TestMain installs,
	// version its version (catalog/VERSION).
	dist, version string
)

// operators are the four operators a release holds.
var operators = []string{"database", "mysql-backup", "etcd-cluster", "gordon"}

// deployment is an operator as one variant of its manifests installs it: the
// operator[:variant] make deploy takes, the namespace it runs in and its
// Deployment's name.
type deployment struct{ spec, namespace, name string }

// namespaced is what TestMain installs from the release, and what
// docs/run-an-operator.md's make deploy applies: every operator's config/default, and
// the etcd operator's config/cluster-wide beside it (that one acts on
// annotated clusters only, so the two never share one).
var namespaced = []deployment{
	{"database", "database-operator-system", "database-operator"},
	{"gordon", "gordon-operator-system", "gordon-operator"},
	{"mysql-backup", "mysql-backup-operator-system", "mysql-backup-operator"},
	{"etcd-cluster", "etc", "etcd-cluster-operator"},
	{"etcd-cluster:cluster-wide", "etcd-operator-system", "etcd-cluster-operator"},
}

// clusterWide is what TestClusterWideVariants switches the other three to:
// the same Deployments, serving every namespace.
var clusterWide = []deployment{
	{"database:cluster-wide", "database-operator-system", "database-operator"},
	{"gordon:cluster-wide", "gordon-operator-system", "gordon-operator"},
	{"mysql-backup:cluster-wide", "mysql-backup-operator-system", "mysql-backup-operator"},
}

// specs is the DEPLOY of make deploy for the deployments ds.
func specs(ds []deployment) string {
	var specs []string
	for _, d := range ds {
		specs = append(specs, d.spec)
	}
	return strings.Join(specs, " ")
}

// deployDoc shows the make deploy commands (makeDeploy).
const deployDoc = "docs/run-an-operator.md"

// makeDeploy is the command deployDoc shows for the deployments ds.
func makeDeploy(ds []deployment) string { return fmt.Sprintf("make deploy DEPLOY=%q", specs(ds)) }

// deploy runs makeDeploy(ds) on this suite's cluster.
func deploy(ctx context.Context, ds []deployment) error {
	_, err := suite.Run(ctx, "make", "deploy", "CLUSTER_NAME="+suite.Name(), "DEPLOY="+specs(ds))
	return err
}

func TestMain(m *testing.M) {
	var err error
	if suite, err = cluster.NewDeploy(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if dist, err = os.MkdirTemp("", "deploy-dist-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithConfig(envconf.New())
	testEnv.Setup(suite.Setup(), func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if suite.Provider == cluster.Kubeconfig {
			skip = "make deploy deploys on the local cluster or kind, which the suite creates"
			return ctx, nil
		}
		if ok, why := suite.RealContainers(ctx); !ok {
			skip = why
			return ctx, nil
		}
		// The commands docs/run-an-operator.md shows, on this suite's
		// cluster.
		page, err := os.ReadFile(filepath.Join(suite.Root, deployDoc))
		if err != nil {
			return ctx, err
		}
		for _, ds := range [][]deployment{namespaced, clusterWide} {
			if shown := makeDeploy(ds); !strings.Contains(string(page), "\n"+shown+"\n") {
				return ctx, fmt.Errorf("%s does not show %s", deployDoc, shown)
			}
		}
		return ctx, installRelease(ctx)
	})
	testEnv.Finish(suite.Finish())
	code := testEnv.Run(m)
	_ = os.RemoveAll(dist)
	os.Exit(code)
}

// installRelease installs the operators on the suite's fresh cluster as a
// cluster admin does from a release: make release (for the host's platform
// only: mkimage's unit tests cover the two-platform index) writes the
// manifests and images into dist; each image is put on the node (a
// registry serves it elsewhere), namespace etc created, as README.md says,
// and each manifest of namespaced applied as README.md shows.
func installRelease(ctx context.Context) error {
	v, err := os.ReadFile(filepath.Join(suite.Root, "catalog", "VERSION"))
	if err != nil {
		return err
	}
	version = strings.TrimSpace(string(v))
	if out, err := suite.Run(ctx, "make", "release", "VERSION="+version,
		"PLATFORMS=linux/"+runtime.GOARCH, "RELEASE_DIR="+dist); err != nil {
		return fmt.Errorf("make release: %w\n%s", err, out)
	}
	for _, op := range operators {
		if out, err := load(ctx, filepath.Join(dist, "images", op+"-operator.tar")); err != nil {
			return fmt.Errorf("loading %s's image: %w\n%s", op, err, out)
		}
	}
	// On the local cluster, pods of images the real node has no stand-in
	// for go to the fake nodes: the operators' have one now (make deploy
	// says so too).
	if suite.Provider != cluster.Kind {
		if out, err := suite.Run(ctx, "scripts/node.sh", "admit", suite.Name(), "ghcr.io/operator-workshops/"); err != nil {
			return fmt.Errorf("scripts/node.sh admit: %w\n%s", err, out)
		}
	}
	if out, err := suite.Run(ctx, "kubectl", "create", "namespace", "etc"); err != nil {
		return fmt.Errorf("kubectl create namespace etc: %w\n%s", err, out)
	}
	for _, d := range namespaced {
		if out, err := suite.Run(ctx, "kubectl", "apply", "--server-side", "-f", manifest(d)); err != nil {
			return fmt.Errorf("kubectl apply --server-side -f %s: %w\n%s", manifest(d), err, out)
		}
	}
	for _, d := range namespaced {
		if out, err := suite.Run(ctx, "kubectl", "rollout", "status", "-n", d.namespace, "deployment/"+d.name, "--timeout=3m"); err != nil {
			return fmt.Errorf("%s from %s did not roll out: %w\n%s\n%s", d.name, manifest(d), err, out, stuck(ctx, d))
		}
	}
	return nil
}

// manifest is the release's install manifest of the deployment d.
func manifest(d deployment) string {
	return filepath.Join(dist, strings.ReplaceAll(d.spec, ":", "-")+".yaml")
}

// stuck is what kubectl shows of d's pods and its namespace's events, for a
// rollout that did not finish.
func stuck(ctx context.Context, d deployment) string {
	pods, _ := suite.Run(ctx, "kubectl", "get", "pods", "-o", "wide", "-n", d.namespace, "-l", "app.kubernetes.io/name="+d.name)
	events, _ := suite.Run(ctx, "kubectl", "get", "events", "-n", d.namespace, "--sort-by=.lastTimestamp")
	return pods + events
}

func needDeployed(t *testing.T) {
	t.Helper()
	if skip != "" {
		t.Skip("needs the operators deployed on a node that runs containers: " + skip)
	}
}

// kubectl runs kubectl with a deadline of its own.
func kubectl(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return suite.Kubectl(ctx, t, args...)
}

// Each operator runs as the pod its release manifest describes: on the node
// that runs containers, from the image by the digest the manifest names, as
// its own ServiceAccount.
func TestOperatorsRunFromTheirManifests(t *testing.T) {
	needDeployed(t)
	checkRunning(t, namespaced)
	for _, d := range namespaced {
		if want, got := releasedImage(t, d), deployedImage(t, d.namespace, d.name); got != want {
			t.Errorf("%s runs %s, want %s's %s", d.name, got, manifest(d), want)
		}
	}
}

// releasedImage is the image by digest the release's manifest of d names.
func releasedImage(t *testing.T, d deployment) string {
	t.Helper()
	m, err := os.ReadFile(manifest(d))
	if err != nil {
		t.Fatal(err)
	}
	op := strings.SplitN(d.spec, ":", 2)[0]
	image := regexp.MustCompile(`(?m)^ +image: (ghcr.io/operator-workshops/` + op + `-operator@sha256:[0-9a-f]{64})$`).FindSubmatch(m)
	if image == nil {
		t.Fatalf("%s names no %s-operator image by digest", manifest(d), op)
	}
	return string(image[1])
}

// make release wrote, beside the manifests and images TestMain installed,
// each operator's cluster-wide manifest, its OLM bundle and the bundle's
// image, labelled for OLM with its package.
func TestReleaseWroteItsArtefacts(t *testing.T) {
	needDeployed(t)
	v := version
	for _, op := range operators {
		for _, f := range []string{op + ".yaml", op + "-cluster-wide.yaml", "images/" + op + "-operator.tar",
			"bundles/" + op + "/" + v + "/manifests/" + op + ".clusterserviceversion.yaml", chartFile(op, v)} {
			if _, err := os.Stat(filepath.Join(dist, f)); err != nil {
				t.Errorf("make release wrote no %s: %v", f, err)
			}
		}
		archive := filepath.Join(dist, "images", op+"-bundle-"+v+".tar")
		labels, err := imageLabels(archive)
		if err != nil {
			t.Errorf("the bundle image of %s: %v", op, err)
		} else if got := labels["operators.operatorframework.io.bundle.package.v1"]; got != op {
			t.Errorf("%s is labelled the bundle of package %q, want %q", archive, got, op)
		}
	}
	// The GitHub Release's notes: CHANGELOG.md's section of the version.
	notes, err := os.ReadFile(filepath.Join(dist, "RELEASE-NOTES.md"))
	if first, _, _ := strings.Cut(string(notes), "\n"); err != nil || !strings.HasPrefix(first, "## ") || !strings.Contains(first, " "+v) ||
		strings.Count(string(notes), "\n## ") != 0 || !strings.Contains(string(notes), "\n### ") {
		t.Errorf("RELEASE-NOTES.md (%v) is not CHANGELOG.md's one section of %s:\n%.300s", err, v, notes)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Errorf("make release wrote no SHA256SUMS: %v", err)
	}
	for _, op := range operators {
		sbom := "sbom/" + op + "-operator.linux-" + runtime.GOARCH + ".cdx.json"
		releasedSBOM(t, filepath.Join(dist, sbom), op)
		for _, f := range []string{sbom, chartFile(op, version)} {
			if !strings.Contains(string(sums), "  "+f+"\n") {
				t.Errorf("SHA256SUMS lists no %s", f)
			}
		}
	}
}

// chartFile is the Helm chart of op in release v, in dist.
func chartFile(op, v string) string { return "charts/" + op + "-operator-" + v + ".tgz" }

// releasedSBOM checks the SBOM of op's binary in a release: CycloneDX, of
// the operator's module at the release's version, listing the modules it
// is built on (every operator's manager is controller-runtime's, and
// talks to the API server through client-go) by package URL.
func releasedSBOM(t *testing.T, file, op string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Errorf("make release wrote no SBOM of %s: %v", op, err)
		return
	}
	var bom struct {
		BOMFormat string
		Metadata  struct {
			Component struct{ Name, Version string }
		}
		Components []struct{ Purl string }
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Errorf("%s: %v", file, err)
		return
	}
	module := "github.com/operator-workshops/workshop/operators/" + op
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != module || bom.Metadata.Component.Version != "v"+version {
		t.Errorf("%s: a %s document of %s %s, want CycloneDX of %s v%s", file, bom.BOMFormat,
			bom.Metadata.Component.Name, bom.Metadata.Component.Version, module, version)
	}
	for _, dep := range []string{"pkg:golang/sigs.k8s.io/controller-runtime@", "pkg:golang/k8s.io/client-go@"} {
		if !slices.ContainsFunc(bom.Components, func(c struct{ Purl string }) bool { return strings.HasPrefix(c.Purl, dep) }) {
			t.Errorf("%s lists no %s...", file, dep)
		}
	}
}

// imageLabels reads the labels of the image in a docker archive: its
// manifest.json names the image's config.
func imageLabels(archive string) (map[string]string, error) {
	files := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		// manifest.json and the config it names; not the layers.
		if h.Size < 1<<20 {
			if files[h.Name], err = io.ReadAll(r); err != nil {
				return nil, err
			}
		}
	}
	var manifest []struct{ Config string }
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	} else if len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json names %d images, want one", len(manifest))
	}
	var config struct {
		Config struct{ Labels map[string]string }
	}
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		return nil, fmt.Errorf("the image's config %s: %w", manifest[0].Config, err)
	}
	return config.Config.Labels, nil
}

// A CR of each kind becomes Ready through the deployed operators, its
// workload on a node that runs containers, in the namespace its operator serves; the
// same CRs in another namespace stay untouched.
func TestCustomResourcesBecomeReady(t *testing.T) {
	needDeployed(t)
	outside := namespace(t)
	// The same CRs in another namespace, applied first: an operator that
	// watched them would act on them at once.
	untouched := []cr{
		{"a Database", outside, databaseSample, "database/mysql-db"},
		{"a Gordon", outside, gordonSample, "gordon/gordoncluster"},
		{"a MySQL", outside, mysqlSample, "mysql/mysql-instance"},
	}
	apply(t, untouched)
	checkCRs(t, []cr{
		{"a mysql Database", "default", databaseSample, "database/mysql-db"},
		{"a Gordon", "default", gordonSample, "gordon/gordoncluster"},
		{"the homework's MySQL", "default", mysqlSample, "mysql/mysql-instance"},
		// The namespaced etcd operator acts on its own namespace, the
		// cluster-wide one on the annotated clusters of every namespace.
		{"an EtcdCluster of the namespaced operator", "etc", etcdSample, "etcdcluster/example-etcd-cluster"},
		{"an EtcdCluster of the cluster-wide operator", outside, clusterwideEtcdSample, "etcdcluster/example-etcd-cluster"},
	}, func(t *testing.T) {
		for _, c := range untouched {
			t.Run(c.name+" outside namespace default stays untouched", func(t *testing.T) {
				got := kubectl(t, time.Minute, "get", "-n", c.namespace, c.object, "-o", "jsonpath={.metadata.finalizers}{.status}")
				if got != "" {
					t.Errorf("a namespaced operator acted on %s in %s: finalizers and status %q", c.object, c.namespace, got)
				}
			})
		}
	})
	// Every request of the deployed operators was allowed, over the CRs' whole
	// lives: their logs hold no RBAC refusal, leader election's included.
	// The envtest suites compare the generated RBAC with the requests they
	// record (operators/common/testenv/rights.go); here it is granted by the
	// shipped bindings on a real API server.
	t.Run("no request of the operators was forbidden", func(t *testing.T) { checkLogs(t, namespaced) })
}

// make deploy, as deployDoc shows it, over the release TestMain installed:
// it builds each operator's image as make release does, byte for byte (the
// same digest), so every Deployment is left as it was and no operator
// restarts.
func TestMakeDeployBuildsTheReleasedImages(t *testing.T) {
	needDeployed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	generation := func(d deployment) string {
		return kubectl(t, time.Minute, "get", "deployment", "-n", d.namespace, d.name, "-o", "jsonpath={.metadata.generation}")
	}
	before := map[string]string{}
	for _, d := range namespaced {
		before[d.spec] = generation(d)
	}
	if err := deploy(ctx, namespaced); err != nil {
		t.Fatalf("%s: %v", makeDeploy(namespaced), err)
	}
	for _, d := range namespaced {
		if want, got := releasedImage(t, d), deployedImage(t, d.namespace, d.name); got != want {
			t.Errorf("after %s, %s runs %s, want the release's %s", makeDeploy(namespaced), d.name, got, want)
		}
		if got := generation(d); got != before[d.spec] {
			t.Errorf("%s changed deployment %s/%s (generation %s, was %s)", makeDeploy(namespaced), d.namespace, d.name, got, before[d.spec])
		}
	}
}

// config/cluster-wide, applied over config/default as deployDoc shows: the
// same Deployments, now acting on the CRs of any namespace, with every
// request allowed.
func TestClusterWideVariants(t *testing.T) {
	needDeployed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := deploy(ctx, clusterWide); err != nil {
		t.Fatal(err)
	}
	checkRunning(t, clusterWide)
	ns := namespace(t)
	checkCRs(t, []cr{
		{"a mysql Database", ns, databaseSample, "database/mysql-db"},
		{"a Gordon", ns, gordonSample, "gordon/gordoncluster"},
		{"the homework's MySQL", ns, mysqlSample, "mysql/mysql-instance"},
	}, nil)
	checkLogs(t, clusterWide)
}

const (
	databaseSample        = "operators/database/config/samples/mysql-db.yaml"
	gordonSample          = "operators/gordon/config/samples/gordoncluster.yaml"
	mysqlSample           = "operators/mysql-backup/config/samples/mysql-instance.yaml"
	etcdSample            = "operators/etcd-cluster/config/samples/example-etcd-cluster.yaml"
	clusterwideEtcdSample = "labs/etcd/clusterwide-etcd-cluster.yaml"
)

// cr is a custom resource a test applies: what it is, its namespace, its
// manifest and the kubectl name of the object.
type cr struct{ name, namespace, manifest, object string }

// namespace creates a namespace of the test's own, deleted after it.
func namespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("deployed-%d", time.Now().UnixNano()%1_000_000)
	kubectl(t, time.Minute, "create", "namespace", ns)
	t.Cleanup(func() { _, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", ns, "--wait=false") })
	return ns
}

// checkRunning checks that each deployment's pod runs on the node that runs
// containers (the local cluster's real node, kind's only node), its image
// and ServiceAccount the manifests'.
func checkRunning(t *testing.T, ds []deployment) {
	t.Helper()
	node := suite.ContainerNode()
	for _, d := range ds {
		t.Run(d.spec+" runs from its manifests", func(t *testing.T) {
			op := strings.SplitN(d.spec, ":", 2)[0]
			out := kubectl(t, time.Minute, "get", "pods", "-n", d.namespace, "-l", "app.kubernetes.io/name="+d.name,
				"--field-selector=status.phase=Running",
				"-o", `jsonpath={range .items[*]}{.spec.nodeName} {.spec.serviceAccountName} {.spec.containers[0].image}{"\n"}{end}`)
			// By digest, as a release manifest names it.
			want := fmt.Sprintf("%s %s ghcr.io/operator-workshops/%s-operator@sha256:", node, d.name, op)
			if !strings.HasPrefix(out, want) {
				t.Errorf("operator pod: %q, want %q...", out, want)
			}
		})
	}
}

// apply applies the CRs, and deletes them after the test.
func apply(t *testing.T, crs []cr) {
	t.Helper()
	for _, c := range crs {
		kubectl(t, time.Minute, "apply", "-n", c.namespace, "-f", c.manifest)
		t.Cleanup(func() {
			_, _ = suite.Run(context.Background(), "kubectl", "delete", "-n", c.namespace, c.object, "--ignore-not-found", "--wait=false")
		})
	}
}

// checkCRs applies crs, waits for each to be Ready, runs meanwhile (if any),
// then deletes them one by one, which runs what only a deletion does (the
// homework's backup before delete, with its Job and the credentials it then
// removes).
func checkCRs(t *testing.T, crs []cr, meanwhile func(*testing.T)) {
	t.Helper()
	apply(t, crs)
	for _, c := range crs {
		t.Run(c.name+" becomes Ready", func(t *testing.T) {
			kubectl(t, 6*time.Minute, "wait", "-n", c.namespace, "--for=condition=Ready", c.object, "--timeout=5m")
		})
	}
	if meanwhile != nil {
		meanwhile(t)
	}
	for _, c := range crs {
		t.Run(c.name+" is deleted", func(t *testing.T) {
			kubectl(t, 6*time.Minute, "delete", "-n", c.namespace, c.object, "--timeout=5m")
		})
	}
}

// checkLogs checks that each deployment's operator led (its lease) and that
// its log holds no refusal.
func checkLogs(t *testing.T, ds []deployment) {
	t.Helper()
	for _, d := range ds {
		t.Run(d.spec+" was refused nothing", func(t *testing.T) {
			logs := kubectl(t, time.Minute, "logs", "-n", d.namespace, "deployment/"+d.name)
			if !strings.Contains(logs, "Successfully acquired lease") {
				t.Errorf("the operator never led: its log does not say it acquired its lease")
			}
			for _, line := range strings.Split(logs, "\n") {
				// An Event for a CR whose namespace the tests delete is
				// refused while the namespace terminates: no right is
				// missing there.
				i := strings.Index(strings.ToLower(line), "forbidden")
				if i >= 0 && !strings.Contains(line, "because it is being terminated") {
					// The refusal's reason follows the word; what precedes
					// it (an Event's dump) can be long.
					t.Errorf("refused: %.200s ... %.300s", line, line[i:])
				}
			}
		})
	}
}

// The editor and viewer roles the manifests ship for each kind are
// aggregated into the cluster's edit and view: a person bound to view in a
// namespace reads its custom resources and changes none; one bound to edit
// changes them.
func TestUsersRolesAreAggregated(t *testing.T) {
	needDeployed(t)
	ns := namespace(t)
	kubectl(t, time.Minute, "create", "rolebinding", "viewer", "-n", ns, "--clusterrole=view", "--user=workshop-viewer")
	kubectl(t, time.Minute, "create", "rolebinding", "editor", "-n", ns, "--clusterrole=edit", "--user=workshop-editor")
	can := func(verb, resource, user string) (bool, error) {
		out, err := suite.Run(context.Background(), "kubectl", "auth", "can-i", verb, resource, "-n", ns, "--as="+user)
		switch strings.TrimSpace(out) {
		case "yes":
			return true, nil
		case "no":
			return false, nil
		}
		return false, fmt.Errorf("kubectl auth can-i %s %s --as=%s: %q (%w)", verb, resource, user, out, err)
	}
	for _, resource := range []string{"databases.zalando.org", "gordons.operator.prgcont.cz", "mysqls.otus.homework", "etcdclusters.etcd.database.coreos.com"} {
		for _, c := range []struct {
			verb, user string
			want       bool
		}{
			{"list", "workshop-viewer", true},
			{"create", "workshop-viewer", false},
			{"create", "workshop-editor", true},
			{"delete", "workshop-editor", true},
		} {
			// The cluster's aggregation controller fills view and edit
			// within seconds of the roles' creation.
			testenv.Eventually(t, fmt.Sprintf("%s may %s %s in %s: %v", c.user, c.verb, resource, ns, c.want), func(context.Context) error {
				got, err := can(c.verb, resource, c.user)
				if err == nil && got != c.want {
					err = fmt.Errorf("kubectl auth can-i says %v", got)
				}
				return err
			})
		}
	}
}

// The shipped manifests serve each operator's metrics over HTTPS, to a
// client whose token the API server authenticates and allows GET /metrics:
// none is refused (401), one without the metrics-reader role too (403).
func TestMetricsAnswerOnlyWithAToken(t *testing.T) {
	needDeployed(t)
	ns := namespace(t)
	kubectl(t, time.Minute, "create", "serviceaccount", "scraper", "-n", ns)
	kubectl(t, time.Minute, "create", "serviceaccount", "stranger", "-n", ns)
	binding := ns + "-scraper"
	kubectl(t, time.Minute, "create", "clusterrolebinding", binding, "--clusterrole=database-operator-metrics-reader", "--serviceaccount="+ns+":scraper")
	t.Cleanup(func() {
		_, _ = suite.Run(context.Background(), "kubectl", "delete", "clusterrolebinding", binding, "--ignore-not-found")
	})
	scraper := strings.TrimSpace(kubectl(t, time.Minute, "create", "token", "scraper", "-n", ns, "--duration=10m"))
	stranger := strings.TrimSpace(kubectl(t, time.Minute, "create", "token", "stranger", "-n", ns, "--duration=10m"))
	const script = `url=https://database-operator-metrics.database-operator-system.svc:8443/metrics
code() { curl -sk -o /tmp/metrics -w '%{http_code}' "$@" "$url"; }
echo "no token: $(code)"
echo "stranger: $(code -H "Authorization: Bearer $STRANGER")"
echo "scraper: $(code -H "Authorization: Bearer $SCRAPER")"
grep -m1 -o '^controller_runtime_reconcile_total{[^}]*}' /tmp/metrics || echo 'no reconcile metric'`
	kubectl(t, time.Minute, "run", "scrape", "-n", ns, "--image=nicolaka/netshoot:v0.13", "--restart=Never",
		"--env=SCRAPER="+scraper, "--env=STRANGER="+stranger, "--command", "--", "bash", "-c", script)
	kubectl(t, 3*time.Minute, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Succeeded", "pod/scrape", "--timeout=2m")
	out := kubectl(t, time.Minute, "logs", "-n", ns, "scrape")
	for _, want := range []string{"no token: 401", "stranger: 403", "scraper: 200", `controller_runtime_reconcile_total{controller="database"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the scrape printed no %q:\n%s", want, out)
		}
	}
}

// make install applies the CRDs; make deploy IMG= runs an image the cluster
// already has, building and loading nothing; make undeploy removes the
// operator and keeps its CRDs and custom resources.
func TestDeployImageThenUndeploy(t *testing.T) {
	needDeployed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const ns, name = "gordon-operator-system", "gordon-operator"
	image := deployedImage(t, ns, name)
	if out, err := suite.Run(ctx, "make", "deploy", "DEPLOY=gordon", "IMG="+image); err != nil {
		t.Fatalf("make deploy DEPLOY=gordon IMG=%s: %v\n%s", image, err, out)
	} else if strings.Contains(out, "release.sh: built") {
		t.Errorf("make deploy IMG= built images:\n%s", out)
	}
	// make install applies the CRDs that are there already: nothing to
	// change, and no custom resource lost.
	if out, err := suite.Run(ctx, "make", "install"); err != nil || !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/gordons.operator.prgcont.cz serverside-applied") {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	mine := namespace(t)
	kubectl(t, time.Minute, "apply", "-n", mine, "-f", filepath.Join(suite.Root, gordonSample))

	if out, err := suite.Run(ctx, "make", "undeploy", "DEPLOY=gordon"); err != nil {
		t.Fatalf("make undeploy DEPLOY=gordon: %v\n%s", err, out)
	}
	if out, err := suite.Run(ctx, "kubectl", "get", "namespace", ns); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("after make undeploy, namespace %s: %v\n%s", ns, err, out)
	}
	kubectl(t, time.Minute, "get", "crd", "gordons.operator.prgcont.cz")
	kubectl(t, time.Minute, "get", "gordon", "-n", mine, "gordoncluster")
}

// deployedImage is the image the operator's Deployment runs.
func deployedImage(t *testing.T, ns, name string) string {
	t.Helper()
	return kubectl(t, time.Minute, "get", "deployment", "-n", ns, name, "-o", "jsonpath={.spec.template.spec.containers[0].image}")
}

// load puts an image archive on the node that runs containers, named by tag
// and digest, as a cluster would pull it.
func load(ctx context.Context, archive string) (string, error) {
	script := "scripts/node.sh"
	if suite.Provider == cluster.Kind {
		script = "scripts/kind.sh"
	}
	return suite.Run(ctx, script, "load", suite.Name(), archive)
}

// releaseScript runs scripts/release.sh with args on the source tree tree
// (a worktree of a released commit) and returns its standard output.
func releaseScript(ctx context.Context, t *testing.T, tree string, args ...string) string {
	t.Helper()
	cmd := suite.Command(ctx, "scripts/release.sh", args...)
	cmd.Env = append(cmd.Env, "TREE="+tree, "PLATFORMS=linux/"+runtime.GOARCH)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TREE=%s scripts/release.sh %s: %v\n%s", tree, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// A cluster admin who installed the previous release's manifest (the
// mysql-backup operator of the commit catalog/RELEASES records, its image
// built from that commit) upgrades with make deploy: the homework's MySQL,
// with a row written through the old operator, stays Ready under the new
// one, and the row is there; its deletion then runs the new operator's
// backup.
func TestUpgradeFromPreviousReleaseKeepsData(t *testing.T) {
	needDeployed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	releases, err := os.ReadFile(filepath.Join(suite.Root, "catalog", "RELEASES"))
	if err != nil {
		t.Fatal(err)
	}
	var previous string
	for _, line := range strings.Split(string(releases), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			previous = f[0]
		}
	}
	if previous == "" {
		t.Fatal("catalog/RELEASES records no release")
	}
	tree := releaseScript(ctx, t, "", "worktree", previous)
	const ns, name, repo = "mysql-backup-operator-system", "mysql-backup-operator", "ghcr.io/operator-workshops/mysql-backup-operator"
	archive := filepath.Join(t.TempDir(), "mysql-backup-operator.tar")
	old := repo + "@" + releaseScript(ctx, t, tree, "image", "mysql-backup", archive, repo+":v"+previous)
	if out, err := load(ctx, archive); err != nil {
		t.Fatalf("loading %s: %v\n%s", archive, err, out)
	}
	apply := suite.Command(ctx, "kubectl", "apply", "--server-side", "--force-conflicts", "-f", "-")
	apply.Stdin = strings.NewReader(releaseScript(ctx, t, tree, "manifest", "mysql-backup", "default", old))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("applying release %s's manifest: %v\n%s", previous, err, out)
	}
	kubectl(t, 4*time.Minute, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
	if got := deployedImage(t, ns, name); got != old {
		t.Fatalf("release %s's operator runs %s, want %s", previous, got, old)
	}

	sql := func(statement string) string {
		return kubectl(t, time.Minute, "exec", "-n", "default", "deploy/mysql-instance", "--", "mysql", "-uroot", "-potuspassword", "-N", "-e", statement, "otus-database")
	}
	checkCRs(t, []cr{{"the homework's MySQL", "default", mysqlSample, "mysql/mysql-instance"}}, func(t *testing.T) {
		sql("CREATE TABLE kept (v varchar(20)); INSERT INTO kept VALUES ('before upgrade')")
		server := func() string {
			return kubectl(t, time.Minute, "get", "pods", "-n", "default", "-l", "app=mysql-instance", "-o", "jsonpath={.items[*].metadata.uid}")
		}
		before := server()
		if before == "" {
			t.Fatal("no pod with the label app=mysql-instance")
		}
		if out, err := suite.Run(ctx, "make", "deploy", "CLUSTER_NAME="+suite.Name(), "DEPLOY=mysql-backup"); err != nil {
			t.Fatalf("make deploy DEPLOY=mysql-backup: %v\n%s", err, out)
		}
		if got := deployedImage(t, ns, name); got == old || !strings.HasPrefix(got, repo+"@sha256:") {
			t.Fatalf("after make deploy the operator runs %s, want this tree's image by digest (not %s)", got, old)
		}
		kubectl(t, 6*time.Minute, "wait", "-n", "default", "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
		if got := sql("SELECT v FROM kept"); strings.TrimSpace(got) != "before upgrade" {
			t.Errorf("after the upgrade the table kept holds %q, want the row written before it", got)
		}
		// The new operator labels the server's pods for its Service itself;
		// the template release 0.2.0 labelled stays, so that the upgrade
		// restarts no server.
		if after := server(); after != before {
			t.Errorf("the upgrade restarted the server: its pod was %s, is %s", before, after)
		}
	})
}

// make uninstall: every CRD goes, and with it every custom resource
// (a Gordon no operator serves, here), while the operators still run; then
// the API server serves none of the four kinds.
func TestUninstallDeletesTheCRDs(t *testing.T) {
	needDeployed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := namespace(t)
	kubectl(t, time.Minute, "apply", "-n", ns, "-f", filepath.Join(suite.Root, gordonSample))
	if out, err := suite.Run(ctx, "make", "uninstall"); err != nil {
		t.Fatalf("make uninstall: %v\n%s", err, out)
	}
	crds := kubectl(t, time.Minute, "get", "crd", "-o", "name")
	for _, group := range []string{"zalando.org", "otus.homework", "etcd.database.coreos.com", "operator.prgcont.cz"} {
		if strings.Contains(crds, "."+group+"\n") || strings.HasSuffix(crds, "."+group) {
			t.Errorf("after make uninstall a CRD of %s is left:\n%s", group, crds)
		}
	}
	// kubectl says it one way or the other, as its discovery cache knew the
	// kind or not.
	if out, err := suite.Run(ctx, "kubectl", "get", "gordons", "-n", ns); err == nil ||
		!strings.Contains(out, "the server doesn't have a resource type") && !strings.Contains(out, "the server could not find the requested resource") {
		t.Errorf("after make uninstall, kubectl get gordons: %v\n%s", err, out)
	}
}

// helmCommands are the commands README.md shows to install, upgrade and
// uninstall an operator with the Helm chart of release version.
func helmCommands(version string) []string {
	chart := "dist/charts/gordon-operator-" + version + ".tgz"
	return []string{
		"helm install gordon " + chart + " -n gordon-operator-system --create-namespace",
		"helm upgrade gordon " + chart + " -n gordon-operator-system --reuse-values --set clusterWide=true",
		"helm uninstall gordon -n gordon-operator-system",
	}
}

// Helm, after make uninstall: README.md's commands install the gordon
// chart make release packaged where make undeploy removed the operator its
// manifest installed, and the chart installs the CRD again (Helm installs
// a chart's crds/ when they are absent). Its operator runs the release's
// image by the digest the manifest names too, and makes a Gordon Ready;
// the upgrade to cluster-wide rolls the operator and keeps the Gordon's
// pods, and the operator then serves another namespace too; the uninstall
// removes the operator and leaves the CRD and the Gordon (Helm's
// convention).
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	needDeployed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	readme, err := os.ReadFile(filepath.Join(suite.Root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	commands := helmCommands(version)
	for _, c := range commands {
		if !strings.Contains(string(readme), "\n"+c) {
			t.Fatalf("README.md does not show %s", c)
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := suite.Run(ctx, name, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	run("scripts/build-tools.sh", "helm")
	run("make", "undeploy", "CLUSTER_NAME="+suite.Name(), "DEPLOY=gordon gordon:cluster-wide")
	// The chart installs where the manifest did, the release's image.
	gordon := namespaced[slices.IndexFunc(namespaced, func(d deployment) bool { return d.spec == "gordon" })]
	ns, name := gordon.namespace, gordon.name
	// Each command as shown, the release's files where make release wrote
	// them.
	helm := func(i int) {
		args := strings.Fields(commands[i])[1:]
		for j, a := range args {
			if rest, ok := strings.CutPrefix(a, "dist/"); ok {
				args[j] = filepath.Join(dist, rest)
			}
		}
		run(filepath.Join(suite.Root, "bin", "helm"), args...)
	}

	helm(0)
	kubectl(t, 4*time.Minute, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
	if want, got := releasedImage(t, gordon), deployedImage(t, ns, name); got != want {
		t.Errorf("the chart's operator runs %s, want the release's %s", got, want)
	}
	kubectl(t, time.Minute, "apply", "-n", "default", "-f", filepath.Join(suite.Root, gordonSample))
	kubectl(t, 4*time.Minute, "wait", "-n", "default", "--for=condition=Ready", "gordon/gordoncluster", "--timeout=3m")
	// uids lists the UIDs of the pods of namespace ns with the labels.
	uids := func(ns, labels string) string {
		return kubectl(t, time.Minute, "get", "pods", "-n", ns, "-l", labels, "-o", "jsonpath={.items[*].metadata.uid}")
	}
	const gordonPods = "app.kubernetes.io/name=gordon,app.kubernetes.io/instance=gordoncluster"
	before := uids("default", gordonPods)
	if len(strings.Fields(before)) != 3 {
		t.Fatalf("the Gordon's pods: %q, want 3", before)
	}

	operator := uids(ns, "app.kubernetes.io/name="+name)
	helm(1)
	kubectl(t, 4*time.Minute, "rollout", "status", "-n", ns, "deployment/"+name, "--timeout=3m")
	if after := uids(ns, "app.kubernetes.io/name="+name); after == operator {
		t.Errorf("the upgrade to cluster-wide did not roll the operator (pod %s)", after)
	}
	other := namespace(t)
	kubectl(t, time.Minute, "apply", "-n", other, "-f", filepath.Join(suite.Root, gordonSample))
	kubectl(t, 4*time.Minute, "wait", "-n", other, "--for=condition=Ready", "gordon/gordoncluster", "--timeout=3m")
	kubectl(t, 4*time.Minute, "wait", "-n", "default", "--for=condition=Ready", "gordon/gordoncluster", "--timeout=3m")
	if after := uids("default", gordonPods); after != before {
		t.Errorf("the upgrade replaced the Gordon's pods: %s, were %s", after, before)
	}

	helm(2)
	if out, err := suite.Run(ctx, "kubectl", "get", "deployment", "-n", ns, name); err == nil {
		t.Errorf("after helm uninstall the operator's Deployment is still there:\n%s", out)
	}
	kubectl(t, time.Minute, "get", "crd", "gordons.operator.prgcont.cz")
	kubectl(t, time.Minute, "get", "-n", "default", "gordon/gordoncluster")
}
