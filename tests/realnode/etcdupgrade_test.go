package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// An EtcdCluster of the workshops' etcd 3.2.13 upgraded to 3.3.27, the next
// minor release, on real servers of both (scripts/images.sh builds them from
// their source): every member rolls onto its volume, every key written
// before is there after, and each member's server says it runs 3.3.27. The
// 3.2 leader knows no MoveLeader, so its turn comes without one.
func TestEtcdUpgradeKeepsEveryKey(t *testing.T) {
	needReal(t)
	if suite.Provider == cluster.Kind {
		t.Skip("on kind the registry mirror serves the workshops' etcd 3.2.13 only; the upgrade runs on the local cluster's real node")
	}
	const from, to, keys = "3.2.13", "3.3.27", 50
	ctx := context.Background()
	ns := namespace(ctx, t)
	// The 3.3.27 image is built and imported only when asked for, and its
	// pods go to the real node once its name is admitted.
	for _, args := range [][]string{{"import", suite.Name(), "etcd-3.3"}, {"admit", suite.Name(), "quay.io/coreos/etcd:v" + to}} {
		if out, err := suite.Run(ctx, "scripts/node.sh", args...); err != nil {
			t.Fatalf("scripts/node.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := suite.StartInstance(ctx, "etcd-cluster-"+ns, "etcd-cluster", "--namespace="+ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.KillOperator(context.Background(), "etcd-cluster-"+ns) })

	// The CRD's default repository, quay.io/coreos/etcd, which publishes
	// both releases.
	apply := suite.Command(ctx, "kubectl", "apply", "-n", ns, "-f", "-")
	apply.Stdin = strings.NewReader(fmt.Sprintf(`{"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
		"metadata": {"name": "up"}, "spec": {"size": 3, "version": %q}}`, from))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "etcdcluster/up", "--timeout=5m")

	members := func() []string {
		return strings.Fields(suite.Kubectl(ctx, t, "get", "po", "-n", ns, "-l", "etcd_cluster=up",
			"-o", "jsonpath={.items[*].metadata.name}"))
	}
	exec := func(pod string, args ...string) string {
		t.Helper()
		cmd := suite.Command(ctx, "kubectl", append([]string{"exec", "-n", ns, pod, "--"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl exec %s -- %s: %v\n%s", pod, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	version := func(pod string) string {
		status := exec(pod, "etcdctl", "endpoint", "status")
		v := serverVersion(status)
		if v == "" {
			t.Fatalf("etcdctl endpoint status in %s: %q", pod, status)
		}
		return v
	}
	var put strings.Builder
	for i := range keys {
		fmt.Fprintf(&put, "etcdctl put /up/k%02d v%d >/dev/null || exit 1\n", i, i)
	}
	first := members()[0]
	if got := version(first); got != from {
		t.Fatalf("%s's server runs etcd %s, want %s", first, got, from)
	}
	exec(first, "sh", "-c", put.String())

	suite.Kubectl(ctx, t, "patch", "-n", ns, "etcdcluster/up", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"version":%q}}`, to))
	testenv.EventuallyWithin(t, 8*time.Minute, "every member at "+to+" and Ready", func(ctx context.Context) error {
		out, err := suite.Run(ctx, "kubectl", "get", "-n", ns, "etcdcluster/up", "-o",
			`jsonpath={.status.currentVersion} {.status.targetVersion} {.status.size} {.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil {
			return err
		}
		if want := to + "  3 True"; out != want {
			return fmt.Errorf("current and target version, size, Ready: %q, want %q", out, want)
		}
		return nil
	})
	pods := members()
	if len(pods) != 3 {
		t.Fatalf("after the upgrade: pods %v, want 3", pods)
	}
	for _, pod := range pods {
		if got := version(pod); got != to {
			t.Errorf("after the upgrade %s's server runs etcd %s, want %s", pod, got, to)
		}
	}
	got := strings.Split(strings.TrimSpace(exec(pods[0], "etcdctl", "get", "/up/", "--prefix")), "\n")
	want := map[string]string{}
	for i := range keys {
		want[fmt.Sprintf("/up/k%02d", i)] = fmt.Sprintf("v%d", i)
	}
	for i := 0; i+1 < len(got); i += 2 {
		if want[got[i]] == got[i+1] {
			delete(want, got[i])
		}
	}
	if len(want) > 0 {
		t.Errorf("after the upgrade %d of %d keys are lost or changed", len(want), keys)
	}
}

// serverVersion is the release in the output of `etcdctl endpoint status`
// (endpoint, ID, version, ...): what the member's own server reports, not
// its image's tag; empty when the output has no such field.
func serverVersion(status string) string {
	f := strings.Split(status, ", ")
	if len(f) < 3 {
		return ""
	}
	return f[2]
}
