package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

const (
	etcdSample            = "operators/etcd-cluster/config/samples/example-etcd-cluster.yaml"
	etcdClusterWideSample = "labs/etcd/clusterwide-etcd-cluster.yaml"
	etcdName              = "example-etcd-cluster"
)

type etcdNamespaces struct{}

// The workshop's etcd exercises at the level of objects: on the local
// cluster's fake nodes the members do not run (tests/realnode runs the
// real-container steps), so this checks what the operator creates and for
// whom. Two operators run as processes: one namespaced on the workshop's etc
// and etc2, one with --cluster-wide.
func TestWorkshopEtcdClusters(t *testing.T) {
	if suite.Provider != cluster.Local {
		t.Skip("runs two etcd operators as local processes; on kind, tests/realnode deploys it in etc and runs the workshop's etcdctl steps")
	}
	f := features.New("EtcdClusters in two namespaces, and a cluster-wide operator").
		WithSetup("namespaces etc, etc2 and a third, and the two operators", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			third := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
			if err := r.Create(ctx, third); err != nil {
				t.Fatal(err)
			}
			names := []string{"etc", "etc2", third.Name}
			for _, ns := range names[:2] {
				if err := r.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := suite.StartInstance(ctx, "etcd-cluster", "etcd-cluster", "--namespace=etc,etc2"); err != nil {
				t.Fatal(err)
			}
			if err := suite.StartInstance(ctx, "etcd-cluster-wide", "etcd-cluster", "--cluster-wide"); err != nil {
				t.Fatal(err)
			}
			return context.WithValue(ctx, etcdNamespaces{}, names)
		}).
		Assess("the workshop's manifest makes members in etc and in etc2, each cluster its own", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			names := ctx.Value(etcdNamespaces{}).([]string)
			var tokens []string
			for _, ns := range names[:2] {
				c := &etcdv1.EtcdCluster{}
				applySample(context.WithValue(ctx, nsKey{}, ns), t, cfg, etcdSample, c)
				pods := waitMembers(ctx, t, r, ns, etcdName, 3)
				for _, p := range pods {
					args := strings.Join(p.Spec.Containers[0].Args, " ")
					if !strings.Contains(args, "."+etcdName+"."+ns+".svc:2380") {
						t.Errorf("%s/%s peers outside its namespace: %s", ns, p.Name, args)
					}
					if p.Spec.Containers[0].Image != "docker.io/prgcont/etcd:v3.2.13" {
						t.Errorf("%s/%s runs %s", ns, p.Name, p.Spec.Containers[0].Image)
					}
					tokens = append(tokens, argValue(p, "--initial-cluster-token"))
				}
				for _, svc := range []string{etcdName, etcdName + "-client"} {
					if err := r.Get(ctx, svc, ns, &corev1.Service{}); err != nil {
						t.Errorf("service %s/%s: %v", ns, svc, err)
					}
				}
				waitFor(t, ns+" status", conditions.New(r).ResourceMatch(c, func(o k8s.Object) bool {
					st := o.(*etcdv1.EtcdCluster).Status
					return st.Phase == etcdv1.PhaseCreating && st.ServiceName == etcdName+"-client" && st.Size == 3
				}))
			}
			if tokens[0] == tokens[3] {
				t.Errorf("the clusters in etc and etc2 share the cluster token %s", tokens[0])
			}
			return ctx
		}).
		Assess("only the cluster-wide operator acts on the annotated cluster, and only on it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			third := ctx.Value(etcdNamespaces{}).([]string)[2]
			inThird := context.WithValue(ctx, nsKey{}, third)
			applySample(inThird, t, cfg, etcdClusterWideSample, &etcdv1.EtcdCluster{})
			waitMembers(ctx, t, r, third, etcdName, 3)

			// Not annotated, outside etc and etc2: nobody's.
			plain := &etcdv1.EtcdCluster{}
			applySample(inThird, t, cfg, etcdSample, plain, func() { plain.Name = "nobodys" })
			// Annotated, in etc: the cluster-wide operator's, not the namespaced one's.
			annotated := &etcdv1.EtcdCluster{}
			applySample(context.WithValue(ctx, nsKey{}, "etc"), t, cfg, etcdClusterWideSample, annotated, func() { annotated.Name = "wide" })
			waitMembers(ctx, t, r, "etc", "wide", 3)
			if pods := members(ctx, t, r, third, "nobodys"); len(pods) != 0 {
				t.Errorf("an EtcdCluster no operator manages got pods %v", pods)
			}
			got := &etcdv1.EtcdCluster{}
			if err := r.Get(ctx, "nobodys", third, got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != "" {
				t.Errorf("an EtcdCluster no operator manages has status %+v", got.Status)
			}
			return ctx
		}).
		Assess("kubectl delete removes the members, their volumes and Services", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: etcdName, Namespace: "etc"}}
			if err := r.Delete(ctx, c); err != nil {
				t.Fatal(err)
			}
			for _, o := range []k8s.Object{
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: etcdName + "-0", Namespace: "etc"}},
				&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + etcdName + "-0", Namespace: "etc"}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: etcdName + "-client", Namespace: "etc"}},
			} {
				waitFor(t, fmt.Sprintf("%T %s to go", o, o.GetName()), conditions.New(r).ResourceDeleted(o))
			}
			if pods := members(ctx, t, r, "etc2", etcdName); len(pods) != 3 {
				t.Errorf("etc2 lost members with etc's cluster: %v", pods)
			}
			return ctx
		}).
		WithTeardown("operators and namespaces", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, op := range []string{"etcd-cluster", "etcd-cluster-wide"} {
				if err := suite.KillOperator(ctx, op); err != nil {
					t.Error(err)
				}
			}
			for _, ns := range ctx.Value(etcdNamespaces{}).([]string) {
				if err := client(t, cfg).Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).
		Feature()
	testEnv.Test(t, f)
}

// members are the pods labelled as the workshop selects them:
// kubectl get po -l etcd_cluster=<name>.
func members(ctx context.Context, t *testing.T, r *resources.Resources, ns, cluster string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := r.WithNamespace(ns).List(ctx, &pods, resources.WithLabelSelector("etcd_cluster="+cluster)); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func waitMembers(ctx context.Context, t *testing.T, r *resources.Resources, ns, cluster string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, fmt.Sprintf("%d members of %s/%s", n, ns, cluster), func(ctx context.Context) (bool, error) {
		pods = members(ctx, t, r, ns, cluster)
		return len(pods) == n, nil
	})
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	for i, name := range names {
		if want := fmt.Sprintf("%s-%d", cluster, i); name != want {
			t.Errorf("members %v, want %s-0 to %s-%d", names, cluster, cluster, n-1)
			break
		}
	}
	return pods
}

func argValue(p corev1.Pod, flag string) string {
	for _, a := range p.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}
