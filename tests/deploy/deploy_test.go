// Package deploy installs the operators as their shipped manifests say, the
// way a cluster admin does without OLM: scripts/deploy.sh applies each
// operator's config/default (and the etcd operator's config/cluster-wide
// too) on a local cluster of its own ("deploy") with the machine's real
// node, where each operator runs as a pod of its image, built without a
// daemon, under its own ServiceAccount and generated RBAC. Then a CR of each
// kind becomes Ready through the deployed operators and is deleted, and no
// request of theirs was refused. On kind every e2e run
// deploys from config/ already (scripts/kind.sh deploy).
package deploy

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

	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

var (
	testEnv env.Environment
	suite   *cluster.Suite
	// skip is why the operators cannot be deployed here; empty when they can.
	skip string
)

// deployed are the operators and variants scripts/deploy.sh installs, and
// the namespace each runs in.
var deployed = []struct{ spec, namespace, deployment string }{
	{"database", "database-operator-system", "database-operator"},
	{"gordon", "gordon-operator-system", "gordon-operator"},
	{"mysql-backup", "mysql-backup-operator-system", "mysql-backup-operator"},
	{"etcd-cluster", "etc", "etcd-cluster-operator"},
	{"etcd-cluster:cluster-wide", "etcd-operator-system", "etcd-cluster-operator"},
}

func TestMain(m *testing.M) {
	var err error
	if suite, err = cluster.NewDeploy(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithConfig(envconf.New())
	testEnv.Setup(suite.Setup(), func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if suite.Provider != cluster.Local {
			skip = "scripts/deploy.sh deploys on the local cluster; on kind, scripts/kind.sh deploy does it for every e2e run"
			return ctx, nil
		}
		if ok, why := suite.RealContainers(ctx); !ok {
			skip = why
			return ctx, nil
		}
		var specs []string
		for _, d := range deployed {
			specs = append(specs, d.spec)
		}
		// The command README.md shows, on this suite's cluster.
		shown := fmt.Sprintf("make deploy DEPLOY=%q", strings.Join(specs, " "))
		readme, err := os.ReadFile(filepath.Join(suite.Root, "README.md"))
		if err != nil {
			return ctx, err
		}
		if !strings.Contains(string(readme), "\n"+shown+"\n") {
			return ctx, fmt.Errorf("README.md does not show %s", shown)
		}
		_, err = suite.Run(ctx, "make", "deploy", "CLUSTER_NAME="+suite.Name(), "DEPLOY="+strings.Join(specs, " "))
		return ctx, err
	})
	testEnv.Finish(suite.Finish())
	os.Exit(testEnv.Run(m))
}

func needDeployed(t *testing.T) {
	t.Helper()
	if skip != "" {
		t.Skip("needs the operators deployed on a real node: " + skip)
	}
}

// kubectl runs kubectl with a deadline of its own.
func kubectl(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return suite.Kubectl(ctx, t, args...)
}

// Each operator runs as the pod its manifests describe: on the real node,
// from the image scripts/olm-images.sh built, as its own ServiceAccount.
func TestOperatorsRunFromTheirManifests(t *testing.T) {
	needDeployed(t)
	for _, d := range deployed {
		t.Run(d.spec, func(t *testing.T) {
			op := strings.SplitN(d.spec, ":", 2)[0]
			out := kubectl(t, time.Minute, "get", "pods", "-n", d.namespace, "-l", "app.kubernetes.io/name="+d.deployment,
				"-o", `jsonpath={range .items[*]}{.spec.nodeName} {.spec.serviceAccountName} {.spec.containers[0].image} {.status.phase}{"\n"}{end}`)
			want := fmt.Sprintf("real-node %s ghcr.io/operator-workshops/%s-operator:v", d.deployment, op)
			if !strings.HasPrefix(out, want) || !strings.Contains(out, " Running") {
				t.Errorf("operator pod: %q, want %q... Running", out, want)
			}
		})
	}
}

// A CR of each kind becomes Ready through the deployed operators, its
// workload on the real node.
func TestCustomResourcesBecomeReady(t *testing.T) {
	needDeployed(t)
	ctx := context.Background()
	ns := fmt.Sprintf("deployed-%d", time.Now().UnixNano()%1_000_000)
	suite.Kubectl(ctx, t, "create", "namespace", ns)
	t.Cleanup(func() { _, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", ns, "--wait=false") })

	crs := []struct{ name, namespace, manifest, object string }{
		{"a mysql Database", ns, "operators/database/config/samples/mysql-db.yaml", "database/mysql-db"},
		{"a Gordon", ns, "operators/gordon/config/samples/gordoncluster.yaml", "gordon/gordoncluster"},
		{"the homework's MySQL", ns, "operators/mysql-backup/config/samples/mysql-instance.yaml", "mysql/mysql-instance"},
		// The namespaced etcd operator acts on its own namespace, the
		// cluster-wide one on the annotated clusters of every namespace.
		{"an EtcdCluster of the namespaced operator", "etc", "operators/etcd-cluster/config/samples/example-etcd-cluster.yaml", "etcdcluster/example-etcd-cluster"},
		{"an EtcdCluster of the cluster-wide operator", ns, "labs/etcd/clusterwide-etcd-cluster.yaml", "etcdcluster/example-etcd-cluster"},
	}
	for _, cr := range crs {
		kubectl(t, time.Minute, "apply", "-n", cr.namespace, "-f", cr.manifest)
		if cr.namespace == "etc" {
			t.Cleanup(func() {
				_, _ = suite.Run(context.Background(), "kubectl", "delete", "-n", cr.namespace, cr.object, "--wait=false")
			})
		}
	}
	for _, cr := range crs {
		t.Run(cr.name, func(t *testing.T) {
			kubectl(t, 6*time.Minute, "wait", "-n", cr.namespace, "--for=condition=Ready", cr.object, "--timeout=5m")
		})
	}
	// Deleting runs what only a deletion does (the homework's backup before
	// delete, with its Job and the credentials it then removes).
	for _, cr := range crs {
		t.Run(cr.name+" is deleted", func(t *testing.T) {
			kubectl(t, 6*time.Minute, "delete", "-n", cr.namespace, cr.object, "--timeout=5m")
		})
	}
}

// Every request of the deployed operators was allowed, over the CRs' whole
// lives above: their logs hold no RBAC refusal, leader election's included.
// The envtest suites compare the generated RBAC with the requests they
// record (operators/common/testenv/rights.go); here it is granted by the
// shipped bindings on a real API server.
func TestNoRequestWasForbidden(t *testing.T) {
	needDeployed(t)
	for _, d := range deployed {
		t.Run(d.spec, func(t *testing.T) {
			logs := kubectl(t, time.Minute, "logs", "-n", d.namespace, "deployment/"+d.deployment)
			if !strings.Contains(logs, "Successfully acquired lease") {
				t.Errorf("the operator never led: its log does not say it acquired its lease")
			}
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(strings.ToLower(line), "forbidden") {
					t.Errorf("refused: %.400s", line)
				}
			}
		})
	}
}
