// Package olm installs the four operators as a cluster admin does: from this
// repository's catalog, through a real Operator Lifecycle Manager. Its
// cluster ("olm"), a local one with the machine's real node or with
// E2E_PROVIDER=kind a kind cluster, gets `scripts/olm.sh up`, which runs OLM's
// operators on the node where containers run and serves the committed
// catalog (catalog/index) from a local registry mirror. Then each package gets a namespace, an
// OperatorGroup and a Subscription, as catalog/README.md shows; OLM resolves
// it, unpacks the bundle in a Job and runs the operator as a pod with the
// CSV's permissions; a CR of each kind becomes Ready through it; gordon takes
// its upgrade edge (0.1.0 to 0.3.0) with the Gordon running, and the
// mysql-backup and etcd operators theirs (0.2.0, built from the commit that
// released it, to 0.3.0) with data in their CRs' servers; uninstalling an
// operator leaves its CRs and their children in place.
package olm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	// skip is why OLM cannot run here; empty when it can.
	skip string
)

func TestMain(m *testing.M) {
	var err error
	if suite, err = cluster.NewOLM(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithConfig(envconf.New())
	testEnv.Setup(suite.Up(), func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if suite.Provider == cluster.Kubeconfig {
			skip = "scripts/olm.sh installs OLM on the local cluster or kind, which the suite creates"
			return ctx, nil
		}
		if ok, why := suite.RealContainers(ctx); !ok {
			skip = why
			return ctx, nil
		}
		_, err := suite.Run(ctx, "scripts/olm.sh", "up", suite.Name())
		return ctx, err
	})
	testEnv.Finish(suite.Finish())
	os.Exit(testEnv.Run(m))
}

func needOLM(t *testing.T) {
	t.Helper()
	if skip != "" {
		t.Skip("needs OLM on a node that runs containers: " + skip)
	}
}

// subscribe makes namespace ns (deleted after the test) with an OperatorGroup
// that targets it and a Subscription to pkg's channel from our catalog.
// extra holds more Subscription spec fields, as YAML lines.
func subscribe(ctx context.Context, t *testing.T, ns, pkg, channel string, extra ...string) {
	t.Helper()
	suite.Kubectl(ctx, t, "create", "namespace", ns)
	t.Cleanup(func() { _, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", ns, "--wait=false") })
	manifest := fmt.Sprintf(`apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  targetNamespaces: [%[1]s]
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  name: %[2]s
  channel: %[3]s
  source: operator-workshops
  sourceNamespace: olm
`, ns, pkg, channel)
	for _, l := range extra {
		manifest += "  " + l + "\n"
	}
	apply(ctx, t, manifest)
}

// apply applies a manifest given as text.
func apply(ctx context.Context, t *testing.T, manifest string) {
	t.Helper()
	cmd := suite.Command(ctx, "kubectl", "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
}

// installed waits until CSV csv of namespace ns has succeeded: OLM unpacked
// the bundle, created the CRDs, the ServiceAccount, the Role and the
// Deployment, and the operator's pod is ready.
func installed(ctx context.Context, t *testing.T, ns, csv string) {
	t.Helper()
	testenv.EventuallyWithin(t, 8*time.Minute, "CSV "+csv+" Succeeded", func(ctx context.Context) error {
		out, err := suite.Run(ctx, "kubectl", "get", "-n", ns, "csv", csv, "-o", "jsonpath={.status.phase} {.status.message}")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(out, "Succeeded") {
			return fmt.Errorf("phase and message: %q; install plans: %s", out, plans(ctx, ns))
		}
		return nil
	})
}

// plans prints the namespace's InstallPlans, for a failure message.
func plans(ctx context.Context, ns string) string {
	out, _ := suite.Run(ctx, "kubectl", "get", "-n", ns, "installplan", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.spec.clusterServiceVersionNames} {.status.phase} {.status.message}; {end}`)
	return out
}

// install subscribes namespace ns to pkg's channel and waits until OLM
// runs csv's operator: on the node that runs containers, as the CSV's
// ServiceAccount.
func install(ctx context.Context, t *testing.T, ns, pkg, channel, csv string) {
	t.Helper()
	subscribe(ctx, t, ns, pkg, channel)
	installed(ctx, t, ns, csv)
	out := suite.Kubectl(ctx, t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/name="+pkg+"-operator", "-o",
		"jsonpath={.items[0].spec.nodeName} {.items[0].spec.serviceAccountName}")
	if node := suite.ContainerNode(); out != node+" "+pkg+"-operator" {
		t.Errorf("the operator's pod (node, ServiceAccount): %q, want %s and the CSV's %s-operator", out, node, pkg)
	}
	metricsServed(ctx, t, ns, pkg)
}

// metricsServed checks what the head's bundle ships beside its CSV, as OLM
// installed it: the metrics Service in the operator's namespace, whose
// endpoint is the operator's running pod on its metrics port, and the
// ClusterRole that grants reading /metrics.
func metricsServed(ctx context.Context, t *testing.T, ns, pkg string) {
	t.Helper()
	svc := pkg + "-operator-metrics"
	testenv.EventuallyWithin(t, 2*time.Minute, "Service "+svc+" selects the operator's pod", func(ctx context.Context) error {
		pods, err := suite.Run(ctx, "kubectl", "get", "pods", "-n", ns, "-l", "app.kubernetes.io/name="+pkg+"-operator",
			"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			return err
		}
		out, err := suite.Run(ctx, "kubectl", "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name="+svc, "-o",
			"jsonpath={range .items[*]}{range .endpoints[*]}{.targetRef.name} {end}{.ports[0].port}{end}")
		if err != nil {
			return err
		}
		if pods == "" || out != pods+" 8443" {
			return fmt.Errorf("Service %s's endpoints and port: %q, want the operator's pod %q on 8443", svc, out, pods)
		}
		return nil
	})
	role := suite.Kubectl(ctx, t, "get", "clusterrole", pkg+"-operator-metrics-reader", "-o", "jsonpath={.rules[*].nonResourceURLs} {.rules[*].verbs}")
	if role != `["/metrics"] ["get"]` {
		t.Errorf("ClusterRole %s-operator-metrics-reader grants %s, want get on /metrics", pkg, role)
	}
}

// The README's check that OLM reads the catalog.
func TestCatalogReady(t *testing.T) {
	needOLM(t)
	r := readReadme(t)
	if out := r.run(context.Background(), r.block("sh", "lastObservedState")); out != "READY" {
		t.Errorf("the CatalogSource's state is %q, want READY", out)
	}
}

// approve approves the InstallPlan the Subscription of namespace ns waits
// on, and waits until OLM has carried it out.
func approve(ctx context.Context, t *testing.T, ns, sub string) {
	t.Helper()
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=jsonpath={.status.state}=UpgradePending", "subscription/"+sub, "--timeout=5m")
	plan := suite.Kubectl(ctx, t, "get", "-n", ns, "subscription", sub, "-o", "jsonpath={.status.installPlanRef.name}")
	suite.Kubectl(ctx, t, "patch", "-n", ns, "installplan", plan, "--type=merge", "-p", `{"spec":{"approved":true}}`)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Complete", "installplan/"+plan, "--timeout=5m")
}

// upgrade installs pkg's previous release (startingCSV from, each
// InstallPlan approved by hand), lets before make data through it, approves
// the upgrade to csv, the channel's head, and checks the CSV it replaced is
// gone and the operator's Deployment runs only the new version's pods
// before after makes the new operator act and reads the data back.
func upgrade(ctx context.Context, t *testing.T, ns, pkg, channel, from, csv string, before, after func()) {
	t.Helper()
	subscribe(ctx, t, ns, pkg, channel, "startingCSV: "+from, "installPlanApproval: Manual")
	approve(ctx, t, ns, pkg)
	installed(ctx, t, ns, from)
	before()
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=jsonpath={.status.currentCSV}="+csv, "subscription/"+pkg, "--timeout=5m")
	approve(ctx, t, ns, pkg)
	installed(ctx, t, ns, csv)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=delete", "csv/"+from, "--timeout=2m")
	if got := suite.Kubectl(ctx, t, "get", "-n", ns, "deployment", pkg+"-operator", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); !strings.HasSuffix(got, ":"+strings.TrimPrefix(csv, pkg+".")) {
		t.Errorf("after the upgrade the operator runs %s, want %s's image", got, csv)
	}
	// Until the old version's pod has gone, it could be what acts next.
	suite.Kubectl(ctx, t, "rollout", "status", "-n", ns, "deployment/"+pkg+"-operator", "--timeout=3m")
	metricsServed(ctx, t, ns, pkg)
	after()
}

// The database operator's head installed as it is; the mysql-backup
// operator's previous release (0.2.0, built from the commit that released
// it) installed first, a row written into the homework's MySQL through it,
// then upgraded to the head: the new operator changes the root password,
// and the row is read with the new one.
func TestInstallThroughOLM(t *testing.T) {
	needOLM(t)
	t.Run("database", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		const ns = "olm-database"
		install(ctx, t, ns, "database", "alpha", "database.v0.3.0")
		suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", "operators/database/config/samples/mysql-db.yaml")
		suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "database/mysql-db", "--timeout=5m")
	})
	t.Run("mysql-backup upgraded with its data", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		const ns = "olm-mysql-backup"
		sql := func(password, statement string) string {
			return suite.Kubectl(ctx, t, "exec", "-n", ns, "deploy/mysql-instance", "--", "mysql", "-uroot", "-p"+password, "-N", "-e", statement, "otus-database")
		}
		upgrade(ctx, t, ns, "mysql-backup", "alpha", "mysql-backup.v0.2.0", "mysql-backup.v0.3.0", func() {
			suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", "operators/mysql-backup/config/samples/mysql-instance.yaml")
			suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
			sql("otuspassword", "CREATE TABLE kept (v varchar(20)); INSERT INTO kept VALUES ('before upgrade')")
		}, func() {
			// Only the new operator can change the password now: the row
			// read with the new one shows it acted, and on the data.
			suite.Kubectl(ctx, t, "patch", "-n", ns, "mysql/mysql-instance", "--type=merge", "-p", `{"spec":{"password":"upgradedpassword"}}`)
			suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=PasswordChanged", "mysql/mysql-instance", "--timeout=5m")
			suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
			if got := sql("upgradedpassword", "SELECT v FROM kept"); strings.TrimSpace(got) != "before upgrade" {
				t.Errorf("after the upgrade the table kept holds %q, want the row written before it", got)
			}
		})
	})
}

// The prgcont workshop's flow: the etcd operator installed through OLM in
// the namespace etc, the workshop's EtcdCluster, then etcdctl inside a member.
// The operator is the previous release first, upgraded to the head with a
// key in the cluster; the new operator then makes a member whose pod was
// deleted again, and the key is read from that member: the key and the
// three members are there after it.
func TestWorkshopEtcdThroughOLM(t *testing.T) {
	needOLM(t)
	ctx := context.Background()
	ns := "etc"
	members := func() []string {
		return strings.Fields(suite.Kubectl(ctx, t, "get", "po", "-n", ns, "-l", "etcd_cluster=example-etcd-cluster",
			"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"))
	}
	etcdctlIn := func(pod string, args ...string) string {
		cmd := suite.Command(ctx, "kubectl", append([]string{"exec", "-n", ns, pod, "--", "etcdctl"}, args...)...)
		// Its standard output; its standard error goes to the failure.
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("etcdctl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
	etcdctl := func(args ...string) string { return etcdctlIn(members()[0], args...) }
	upgrade(ctx, t, ns, "etcd-cluster", "singlenamespace-alpha", "etcd-cluster.v0.2.0", "etcd-cluster.v0.3.0", func() {
		suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", "operators/etcd-cluster/config/samples/example-etcd-cluster.yaml")
		suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "etcdcluster/example-etcd-cluster", "--timeout=5m")
		etcdctl("put", "kept", "before-upgrade")
	}, func() {
		suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "etcdcluster/example-etcd-cluster", "--timeout=5m")
		pod := members()[0]
		uid := suite.Kubectl(ctx, t, "get", "pod", "-n", ns, pod, "-o", "jsonpath={.metadata.uid}")
		suite.Kubectl(ctx, t, "delete", "pod", "-n", ns, pod)
		testenv.EventuallyWithin(t, 5*time.Minute, "member "+pod+" made again by the new operator", func(ctx context.Context) error {
			out, err := suite.Run(ctx, "kubectl", "get", "pod", "-n", ns, pod, "-o",
				`jsonpath={.metadata.uid} {.status.conditions[?(@.type=="Ready")].status}`)
			if err != nil {
				return err
			}
			if f := strings.Fields(out); len(f) != 2 || f[0] == uid || f[1] != "True" {
				return fmt.Errorf("pod %s: uid and Ready %q, want a new uid and True", pod, out)
			}
			return nil
		})
		if got := etcdctlIn(pod, "get", "kept", "--print-value-only"); strings.TrimSpace(got) != "before-upgrade" {
			t.Errorf("after the upgrade etcdctl get kept in the member made again says %q, want before-upgrade", got)
		}
	})
	out := etcdctl("member", "list")
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 3 {
		t.Errorf("etcdctl member list shows %d members, want 3:\n%s", n, out)
	}
}

// catalog/README.md's gordon steps, its three shell blocks run as a reader
// runs them: gordon 0.1.0 installed first (its InstallPlan approved by hand)
// and a Gordon made Ready by it; then the InstallPlan to the head, 0.3.0,
// that the channel's skipRange offers at once, after which the Gordon's pods must be the
// same, and a pod deleted is made again by the new operator; then the uninstall, after which the operator is gone and the Gordon,
// its pods and the CRD are not.
func TestGordonUpgradeEdge(t *testing.T) {
	needOLM(t)
	ctx := context.Background()
	const ns = "gordon"
	t.Cleanup(func() { _, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", ns, "--wait=false") })
	r := readReadme(t)
	subscription, err := os.ReadFile(filepath.Join(suite.Root, "catalog", "examples", "gordon-subscription.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if shown := r.block("yaml", "startingCSV: gordon.v0.1.0"); shown != string(subscription) {
		t.Fatalf("catalog/README.md shows a Subscription that is not catalog/examples/gordon-subscription.yaml:\n%s", shown)
	}
	gordonPods := func() string {
		return suite.Kubectl(ctx, t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=gordoncluster", "-o", "jsonpath={.items[*].metadata.uid}")
	}

	r.run(ctx, r.block("sh", "kubectl apply -f catalog/examples/gordon-subscription.yaml"))
	pods := gordonPods()
	if n := len(strings.Fields(pods)); n != 3 {
		t.Fatalf("gordon 0.1.0 made %d pods, want 3", n)
	}

	out := r.run(ctx, r.block("sh", "currentCSV}'=gordon.v0.3.0"))
	if !strings.Contains(out, "gordon.v0.3.0") || !strings.Contains(out, "Succeeded") || strings.Contains(out, "gordon.v0.2.0") {
		t.Errorf("kubectl get csv does not show gordon.v0.3.0 Succeeded alone:\n%s", out)
	}
	if got := suite.Kubectl(ctx, t, "get", "-n", ns, "csv", "gordon.v0.3.0", "-o", "jsonpath={.metadata.annotations.olm\\.skipRange}"); got != ">=0.1.0 <0.3.0" {
		t.Errorf("gordon.v0.3.0 skips %q, want >=0.1.0 <0.3.0", got)
	}
	if got := suite.Kubectl(ctx, t, "get", "-n", ns, "subscription", "gordon", "-o", "jsonpath={.status.installedCSV}"); got != "gordon.v0.3.0" {
		t.Errorf("the Subscription says %q is installed, want gordon.v0.3.0", got)
	}
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "gordon/gordoncluster", "--timeout=2m")
	if after := gordonPods(); after != pods {
		t.Errorf("the upgrade replaced the Gordon's pods: %q before, %q after", pods, after)
	}
	// The new operator at work, the old one's pod gone: a pod deleted is
	// made again.
	suite.Kubectl(ctx, t, "rollout", "status", "-n", ns, "deployment/gordon-operator", "--timeout=3m")
	name := strings.Fields(suite.Kubectl(ctx, t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=gordoncluster",
		"-o", "jsonpath={.items[*].metadata.name}"))[0]
	suite.Kubectl(ctx, t, "delete", "pod", "-n", ns, name)
	testenv.EventuallyWithin(t, 3*time.Minute, "the Gordon healed by gordon 0.3.0", func(ctx context.Context) error {
		if now := gordonPods(); len(strings.Fields(now)) != 3 || now == pods {
			return fmt.Errorf("pods %q, want three, one of them new", now)
		}
		return nil
	})
	pods = gordonPods()

	r.run(ctx, r.block("sh", "kubectl -n gordon delete subscription gordon"))
	if got := suite.Kubectl(ctx, t, "get", "-n", ns, "gordon/gordoncluster", "-o", "jsonpath={.spec.gordon.replicas}"); got != "3" {
		t.Errorf("the Gordon after uninstalling: replicas %q, want it kept with 3", got)
	}
	if after := gordonPods(); after != pods {
		t.Errorf("uninstalling the operator changed the Gordon's pods: %q before, %q after", pods, after)
	}
	suite.Kubectl(ctx, t, "get", "crd", "gordons.operator.prgcont.cz")
}

// readme is catalog/README.md, whose install steps the tests run.
type readme struct {
	t    *testing.T
	text string
}

func readReadme(t *testing.T) *readme {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.Root, "catalog", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return &readme{t: t, text: string(b)}
}

// block returns the README's block of the given fence that holds text.
func (r *readme) block(fence, text string) string {
	r.t.Helper()
	for _, part := range strings.Split(r.text, "```"+fence+"\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		if strings.Contains(body, text) {
			return body
		}
	}
	r.t.Fatalf("catalog/README.md has no ```%s block with %q", fence, text)
	return ""
}

// run runs a shell block of the README from the repository root, as bash
// -euo pipefail, and returns its output.
func (r *readme) run(ctx context.Context, script string) string {
	r.t.Helper()
	out, err := suite.Run(ctx, "bash", "-euo", "pipefail", "-c", script)
	r.t.Logf("$ %s%s", script, out)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}
