package v1beta2_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	etcdv1beta2 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
)

// The workshop's manifests, as written, go through the API server; bad sizes
// do not.
func TestAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the envtest control plane (run without -short)")
	}
	env, err := testenv.Environment("etcd.database.coreos.com_etcdclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	if err := etcdv1beta2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	create := func(manifest string) error {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace("default")
		return c.Create(ctx, u, client.FieldValidation("Strict"))
	}

	// Seed 004's manifest, and seed 001's, which names no repository.
	if err := create(`
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "example-etcd-cluster"
  annotations:
    etcd.database.coreos.com/scope: clusterwide
spec:
  size: 3
  version: "3.2.13"
  repository: "docker.io/prgcont/etcd"
`); err != nil {
		t.Fatalf("the workshop's manifest is refused: %v", err)
	}
	if err := create(`
apiVersion: "etcd.database.coreos.com/v1beta2"
kind: "EtcdCluster"
metadata:
  name: "no-repository"
spec:
  size: 3
  version: "3.2.13"
`); err != nil {
		t.Fatalf("the workshop's first manifest is refused: %v", err)
	}
	got := &etcdv1beta2.EtcdCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "no-repository"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Repository != etcdv1beta2.DefaultRepository {
		t.Errorf("repository defaults to %q, want %q", got.Spec.Repository, etcdv1beta2.DefaultRepository)
	}

	tests := []struct {
		name, spec, message string
	}{
		{"size 0", "size: 0", "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"},
		{"negative size", "size: -3", "spec.size in body should be greater than or equal to 1"},
		{"no size", `version: "3.2.13"`, "spec.size: Required value"},
		{"a version that is none", "size: 3\n  version: latest", "spec.version in body should match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := create("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: bad\nspec:\n  " + tt.spec + "\n")
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an error containing %q, got %v", tt.message, err)
			}
		})
	}
}
