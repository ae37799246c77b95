// Package realnode runs the workshops' steps that need real containers: the
// homework's table that survives delete and recreate, etcdctl inside a
// member pod, a client on a Database's NodePort, gordon pods that really
// run. Locally its cluster ("realnode") has the machine's real node
// (scripts/node.sh) besides fake ones; on kind every node is real.
package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

var (
	testEnv env.Environment
	suite   *cluster.Suite
	// skip is why pods cannot really run here; empty when they can.
	skip string
)

func TestMain(m *testing.M) {
	var err error
	if suite, err = cluster.NewRealNode(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithConfig(envconf.New())
	testEnv.Setup(suite.Setup("database", "gordon", "mysql-backup"),
		func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
			if ok, why := suite.RealContainers(ctx); !ok {
				skip = why
			}
			return ctx, nil
		})
	testEnv.Finish(suite.Finish())
	os.Exit(testEnv.Run(m))
}

// needReal skips a step that needs real containers on a cluster without them.
func needReal(t *testing.T) {
	t.Helper()
	if skip != "" {
		t.Skip("needs a real node: " + skip)
	}
}

// sampleSQL runs q in the database of the mysql-backup sample's server in
// ns (otus-database, as root with the sample's password), through kubectl
// exec, and returns its rows without the trailing newline.
func sampleSQL(ctx context.Context, t *testing.T, ns, q string) string {
	t.Helper()
	return strings.TrimSpace(suite.Kubectl(ctx, t, "exec", "-n", ns, "deploy/mysql-instance", "--", "mysql", "-u", "root", "-potuspassword",
		"--batch", "--skip-column-names", "-e", q, "otus-database"))
}

// namespace creates a namespace for one test and deletes it after.
func namespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("real-%d", time.Now().UnixNano()%1_000_000)
	suite.Kubectl(ctx, t, "create", "namespace", ns)
	t.Cleanup(func() { _, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", ns, "--wait=false") })
	return ns
}

func TestTheRealNodeIsReady(t *testing.T) {
	needReal(t)
	ctx := context.Background()
	out := suite.Kubectl(ctx, t, "get", "nodes", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	if !strings.Contains(out, "real-node True") && suite.Provider == cluster.Local {
		t.Errorf("kubectl get nodes: no Ready real-node:\n%s", out)
	}
}

// The homework's own commands: its table survives `kubectl delete` (in the
// foreground, as Argo CD deletes) and `kubectl apply` through the real
// backup and restore Jobs on real volumes; no client reaches the new server
// before its restore is done; a password change works through the Service.
func TestHomeworkTableSurvivesRecreate(t *testing.T) {
	needReal(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	sample := "operators/mysql-backup/config/samples/mysql-instance.yaml"
	password := "otuspassword"
	mysql := func(sql string) string {
		t.Helper()
		pod := suite.Kubectl(ctx, t, "get", "pods", "-n", ns, "-l", "app=mysql-instance", "-o", "jsonpath={.items[*].metadata.name}")
		return suite.Kubectl(ctx, t, "exec", "-n", ns, strings.TrimSpace(pod), "--", "mysql", "-u", "root", "-p"+password, "-e", sql, "otus-database")
	}
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
	mysql("CREATE TABLE test ( id smallint unsigned not null auto_increment, name varchar(20) not null, constraint pk_example primary key (id) );")
	mysql("INSERT INTO test ( id, name ) VALUES ( null, 'some data' );")
	mysql("INSERT INTO test ( id, name ) VALUES ( null, 'some data-2' );")

	suite.Kubectl(ctx, t, "delete", "-n", ns, "mysqls.otus.homework", "mysql-instance", "--cascade=foreground", "--timeout=5m")
	if out := suite.Kubectl(ctx, t, "get", "jobs", "-n", ns); !strings.Contains(out, "backup-mysql-instance-job") {
		t.Fatalf("kubectl get jobs does not show the backup job:\n%s", out)
	}
	if out := suite.Kubectl(ctx, t, "get", "jobs", "-n", ns, "backup-mysql-instance-job", "-o", "jsonpath={.status.succeeded}"); out != "1" {
		t.Fatalf("the MySQL went without a succeeded backup: %q completions", out)
	}
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=delete", "pods", "-l", "app=mysql-instance", "--timeout=3m")
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	// The restore Job starts once the new server answers; until it is done
	// the Service has no endpoint that is ready.
	testenv.EventuallyWithin(t, 5*time.Minute, "the restore Job", func(ctx context.Context) error {
		_, err := suite.Run(ctx, "kubectl", "get", "-n", ns, "job/restore-mysql-instance-job")
		return err
	})
	if ready := readyEndpoints(ctx, t, ns, "mysql-instance"); ready != "" && !restoreDone(ctx, t, ns) {
		t.Errorf("the Service has ready endpoints %q while the restore runs", ready)
	}
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
	if from := suite.Kubectl(ctx, t, "get", "-n", ns, "mysql/mysql-instance", "-o", "jsonpath={.status.restoredFrom}"); from == "" {
		t.Errorf("the new MySQL says it restored nothing")
	}
	if reason := strings.TrimSpace(suite.Kubectl(ctx, t, "get", "-n", ns, "mysql/mysql-instance", "-o", `jsonpath={.status.conditions[?(@.type=="Restored")].reason}`)); reason != "Restored" {
		t.Errorf("Restored says %q on a real node, where the restore Job reports what it loaded", reason)
	}
	out := mysql("select * from test;")
	for _, row := range []string{"1\tsome data\n", "2\tsome data-2\n"} {
		if !strings.Contains(out, row) {
			t.Errorf("select * from test does not show %q:\n%s", row, out)
		}
	}

	// The homework's second extra task, through the Service as a client
	// connects: the new password logs in, the old one is refused.
	suite.Kubectl(ctx, t, "patch", "-n", ns, "mysql/mysql-instance", "--type=merge", "-p", `{"spec":{"password":"n3w-pass"}}`)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=PasswordChanged", "mysql/mysql-instance", "--timeout=5m")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
	password = "n3w-pass"
	viaService := func(pw string) error {
		_, err := suite.Run(ctx, "kubectl", "exec", "-n", ns, "deploy/mysql-instance", "--",
			"mysql", "-h", "mysql-instance", "-uroot", "-p"+pw, "-e", "select 1")
		return err
	}
	testenv.EventuallyWithin(t, 2*time.Minute, "the new password through the Service", func(context.Context) error {
		return viaService("n3w-pass")
	})
	if err := viaService("otuspassword"); err == nil {
		t.Error("the old password still logs in through the Service")
	}
	if rows := mysql("select count(*) from test;"); !strings.Contains(rows, "2") {
		t.Errorf("the table after the password change: %s", rows)
	}
}

// The homework at a learner's pace: the rows are written as soon as the
// server's pod runs (a learner retries while the server still starts), the
// MySQL is deleted at once, without waiting for its own Ready (its first
// restore, from an empty backup volume, may not be reported yet), and
// created again. The rows come back. (Before: the backup was kept aside,
// latest unchanged, and the new MySQL said there was no backup to restore.)
func TestHomeworkAtALearnersPace(t *testing.T) {
	needReal(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	sample := "operators/mysql-backup/config/samples/mysql-instance.yaml"
	pod := func() string {
		t.Helper()
		var name string
		testenv.EventuallyWithin(t, 3*time.Minute, "a Running server pod", func(ctx context.Context) error {
			out, err := suite.Run(ctx, "kubectl", "get", "pods", "-n", ns, "-l", "app=mysql-instance",
				"--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
			if name = strings.TrimSpace(out); err != nil || name == "" || strings.Contains(name, " ") {
				return fmt.Errorf("running server pods: %q (%w)", name, err)
			}
			return nil
		})
		return name
	}
	// exec runs the homework's command, again while the server is still
	// starting, as a learner does.
	exec := func(server, sql string) string {
		t.Helper()
		var out string
		testenv.EventuallyWithin(t, 3*time.Minute, "mysql -e "+sql, func(ctx context.Context) error {
			var err error
			out, err = suite.Run(ctx, "kubectl", "exec", "-n", ns, server, "--", "mysql", "-u", "root", "-potuspassword", "-e", sql, "otus-database")
			return err
		})
		return out
	}

	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	server := pod()
	exec(server, "CREATE TABLE test ( id smallint unsigned not null auto_increment, name varchar(20) not null, constraint pk_example primary key (id) );")
	exec(server, "INSERT INTO test ( id, name ) VALUES ( null, 'some data' );")
	exec(server, "INSERT INTO test ( id, name ) VALUES ( null, 'some data-2' );")
	suite.Kubectl(ctx, t, "delete", "-n", ns, "mysqls.otus.homework", "mysql-instance", "--timeout=5m")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=delete", "pods", "-l", "app=mysql-instance", "--timeout=3m")

	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
	if reason := strings.TrimSpace(suite.Kubectl(ctx, t, "get", "-n", ns, "mysql/mysql-instance", "-o", `jsonpath={.status.conditions[?(@.type=="Restored")].reason}`)); reason != "Restored" {
		t.Errorf("Restored says %q, want Restored: the rows of the first MySQL were backed up", reason)
	}
	out := exec(pod(), "select * from test;")
	for _, row := range []string{"1\tsome data\n", "2\tsome data-2\n"} {
		if !strings.Contains(out, row) {
			t.Errorf("select * from test does not show %q:\n%s", row, out)
		}
	}
}

// readyEndpoints returns the addresses of Service name's endpoints that are
// ready. A slice with no endpoints has none (kubectl prints it as null, which
// jsonpath cannot filter, so the list is read as JSON).
func readyEndpoints(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	var slices discoveryv1.EndpointSliceList
	out := suite.Kubectl(ctx, t, "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name="+name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &slices); err != nil {
		t.Fatalf("kubectl get endpointslices printed no list: %v", err)
	}
	var ready []string
	for _, slice := range slices.Items {
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 {
				ready = append(ready, ep.Addresses[0])
			}
		}
	}
	return strings.Join(ready, " ")
}

// restoreDone reports whether the restore Job has completed (then endpoints
// are due).
func restoreDone(ctx context.Context, t *testing.T, ns string) bool {
	t.Helper()
	return suite.Kubectl(ctx, t, "get", "-n", ns, "job/restore-mysql-instance-job", "-o", "jsonpath={.status.succeeded}") == "1"
}

// The prgcont workshop's etcd steps, with the operator run from outside the
// cluster (it reaches the members through the API server): etcdctl member
// list, put /here test, scale to 5, get /here.
func TestWorkshopEtcdctl(t *testing.T) {
	needReal(t)
	ctx := context.Background()
	var ns string
	if suite.Provider == cluster.Kind {
		// As the workshop deploys it: in the cluster, namespaced, in etc.
		ns = "etc"
		t.Cleanup(func() { _, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", ns, "--wait=false") })
		if err := suite.Deploy(ctx, "etcd-cluster"); err != nil {
			t.Fatal(err)
		}
	} else {
		ns = namespace(ctx, t)
		if err := suite.StartInstance(ctx, "etcd-cluster-"+ns, "etcd-cluster", "--namespace="+ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = suite.KillOperator(context.Background(), "etcd-cluster-"+ns) })
	}
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", "operators/etcd-cluster/config/samples/example-etcd-cluster.yaml")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "etcdcluster/example-etcd-cluster", "--timeout=5m")
	etcdctl := func(args ...string) string {
		t.Helper()
		pod := strings.Fields(suite.Kubectl(ctx, t, "get", "po", "-n", ns, "-l", "etcd_cluster=example-etcd-cluster",
			"-o", "jsonpath={.items[*].metadata.name}"))[0]
		cmd := suite.Command(ctx, "kubectl", append([]string{"exec", "-n", ns, pod, "--", "etcdctl"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := etcdctl("member", "list"); strings.Count(strings.TrimSpace(out), "\n") != 2 {
		t.Errorf("etcdctl member list should list 3 members:\n%s", out)
	}
	// The member's server says which release it is (endpoint, ID,
	// version, ...): the one spec.version and the image's tag name, on
	// which the operator based its membership steps (no learners on 3.2).
	if status := etcdctl("endpoint", "status"); serverVersion(status) != "3.2.13" {
		t.Errorf("etcdctl endpoint status = %q; want the server's version 3.2.13, the sample's spec.version", status)
	}
	etcdctl("put", "/here", "test")

	suite.Kubectl(ctx, t, "patch", "-n", ns, "etcdcluster/example-etcd-cluster", "--type=merge", "-p", `{"spec":{"size":5}}`)
	testenv.EventuallyWithin(t, 5*time.Minute, "5 ready members", func(ctx context.Context) error {
		out, err := suite.Run(ctx, "kubectl", "get", "-n", ns, "etcdcluster/example-etcd-cluster", "-o",
			`jsonpath={.status.size} {.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || strings.TrimSpace(out) != "5 True" {
			return fmt.Errorf("size and Ready: %q %w", out, err)
		}
		return nil
	})
	if out := etcdctl("member", "list"); strings.Count(strings.TrimSpace(out), "\n") != 4 {
		t.Errorf("etcdctl member list should list 5 members:\n%s", out)
	}
	if out := etcdctl("get", "/here"); out != "/here\ntest\n" {
		t.Errorf("etcdctl get /here = %q, want /here and test", out)
	}
}

// A client outside the cluster reaches a Database through its NodePort: the
// mysql client of this machine connects to the real server in the pod.
func TestDatabaseNodePort(t *testing.T) {
	needReal(t)
	if suite.Provider != cluster.Local {
		t.Skip("connects from this machine to the node's address, which is only this machine locally")
	}
	ctx := context.Background()
	ns := namespace(ctx, t)
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", "operators/database/config/samples/mysql-db.yaml")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "database/mysql-db", "--timeout=5m")
	port := suite.Kubectl(ctx, t, "get", "-n", ns, "service/mysql-db", "-o", "jsonpath={.spec.ports[0].nodePort}")
	password := suite.Kubectl(ctx, t, "get", "-n", ns, "secret/mysql-db-root-password", "-o", "jsonpath={.data.password}")
	out := suite.Kubectl(ctx, t, "get", "-n", ns, "pod/mysql-db", "-o", "jsonpath={.spec.nodeName} {.status.hostIP}")
	node, address, _ := strings.Cut(out, " ")
	if node != "real-node" {
		t.Fatalf("pod/mysql-db runs on %q, want the real node", node)
	}
	testenv.EventuallyWithin(t, 2*time.Minute, "mysql on the NodePort", func(ctx context.Context) error {
		cmd := suite.Command(ctx, "bash", "-c",
			`mysql -h "$NODE" -P "$PORT" -u root -p"$(echo "$PASSWORD" | base64 -d)" -N -e 'select 40 + 2'`)
		cmd.Env = append(cmd.Env, "NODE="+address, "PORT="+port, "PASSWORD="+password)
		got, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != "42" {
			return fmt.Errorf("%w: %s", err, got)
		}
		return nil
	})
}

// The gordon pods really run: they log, and a deleted one is replaced by a
// pod whose container really starts.
func TestGordonPodsReallyRun(t *testing.T) {
	needReal(t)
	ctx := context.Background()
	ns := namespace(ctx, t)
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", "operators/gordon/config/samples/gordoncluster.yaml")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "gordon/gordoncluster", "--timeout=3m")
	pods := strings.Fields(suite.Kubectl(ctx, t, "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=gordoncluster",
		"-o", "jsonpath={.items[*].metadata.name}"))
	if len(pods) != 3 {
		t.Fatalf("pods %v, want 3", pods)
	}
	if logs := suite.Kubectl(ctx, t, "logs", "-n", ns, pods[0]); strings.TrimSpace(logs) == "" {
		t.Errorf("kubectl logs %s is empty: the container did not run", pods[0])
	}
	suite.Kubectl(ctx, t, "delete", "pod", "-n", ns, pods[0])
	testenv.EventuallyWithin(t, 3*time.Minute, "a replacement whose container runs", func(ctx context.Context) error {
		out, err := suite.Run(ctx, "kubectl", "get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=gordoncluster", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}`)
		if err != nil {
			return err
		}
		running := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] != pods[0] {
				running++
			}
		}
		if running != 3 {
			return fmt.Errorf("want 3 running containers besides the deleted pod:\n%s", out)
		}
		return nil
	})
}
