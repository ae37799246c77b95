package v1beta2_test

import (
	"context"
	"fmt"
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
	cfg := testenv.Start(t, "etcd.database.coreos.com_etcdclusters.yaml")
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

	const semver = "version must be MAJOR.MINOR.PATCH"
	tests := []struct {
		name, spec, message string
	}{
		{"size 0", "size: 0", "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"},
		{"negative size", "size: -3", "spec.size in body should be greater than or equal to 1"},
		{"size 10", "size: 10", "spec.size in body should be less than or equal to 9"},
		{"a size that is a string", `size: "three"`, "spec.size in body must be of type integer"},
		{"no size", `version: "3.2.13"`, "spec.size: Required value"},
		{"a version that is none", "size: 3\n  version: latest", semver},
		{"a version without its patch", `size: 3` + "\n  " + `version: "3.5"`, semver},
		{"a pre-release version", `size: 3` + "\n  " + `version: "3.6.0-rc.1"`, semver},
		{"a version with a leading zero", `size: 3` + "\n  " + `version: "3.05.1"`, semver},
		{"an empty repository", `size: 3` + "\n  " + `repository: ""`, "spec.repository in body should be at least 1 chars long"},
		{"the operator's label", "size: 3\n  pod:\n    labels: {app: mine}", "pod.labels cannot set app, etcd_cluster"},
		{"the cluster label", "size: 3\n  pod:\n    labels: {etcd_cluster: other}", "pod.labels cannot set app, etcd_cluster"},
		{"a standard label", "size: 3\n  pod:\n    labels: {app.kubernetes.io/instance: other}", "pod.labels cannot set app, etcd_cluster"},
		{"the coreos operator's emptyDir option", "size: 3\n  pod:\n    usePVC: false", `unknown field "spec.pod.usePVC"`},
		{"a repository with a tag", "size: 3\n  repository: quay.io/coreos/etcd:v3.5.0", "repository must be an image name without a tag or digest"},
		{"a repository with a digest", "size: 3\n  repository: quay.io/coreos/etcd@sha256:0123", "repository must be an image name without a tag or digest"},
		{"a volume without a size", "size: 3\n  pod:\n    persistentVolumeClaimSpec: {accessModes: [ReadWriteOnce]}", "persistentVolumeClaimSpec.resources.requests.storage is required"},
		{"a volume from a snapshot", "size: 3\n  pod:\n    persistentVolumeClaimSpec:\n      resources: {requests: {storage: 1Gi}}\n      dataSource: {kind: VolumeSnapshot, name: snap, apiGroup: snapshot.storage.k8s.io}", "cannot have a dataSource or dataSourceRef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := create("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: bad\nspec:\n  " + tt.spec + "\n")
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an error containing %q, got %v", tt.message, err)
			}
		})
	}

	names := []struct{ name, message string }{
		{"with.a.dot", "must be a DNS label"},
		{"1starts-with-a-digit", "must be a DNS label"},
		{strings.Repeat("n", 51), "at most 50 characters"},
	}
	for _, n := range names {
		t.Run("the name "+n.name, func(t *testing.T) {
			err := create("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: " + n.name + "\nspec:\n  size: 3\n")
			if err == nil || !strings.Contains(err.Error(), n.message) {
				t.Fatalf("want an error containing %q, got %v", n.message, err)
			}
		})
	}
	if err := create("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: " + strings.Repeat("n", 50) + "\nspec:\n  size: 3\n"); err != nil {
		t.Errorf("a name of 50 characters is refused: %v", err)
	}

	// Upgrades: one minor version at a time; an edit may take one back (the
	// operator moves no member down).
	upgrades := []struct {
		from, to, refused string
	}{
		{"3.5.0", "3.5.21", ""},
		{"3.5.21", "v3.6.0", ""},
		{"3.6.4", "3.6.1", ""},
		{"3.6.0", "3.5.0", ""},
		{"3.4.0", "3.6.0", "never skip one"},
		{"3.6.0", "3.4.0", "never skip one"},
		{"3.6.0", "4.0.0", "never skip one"},
	}
	for i, u := range upgrades {
		t.Run(u.from+" to "+u.to, func(t *testing.T) {
			name := fmt.Sprintf("upgrade-%d", i)
			if err := create(fmt.Sprintf("apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: %s\nspec:\n  size: 3\n  version: %q\n", name, u.from)); err != nil {
				t.Fatal(err)
			}
			got := &etcdv1beta2.EtcdCluster{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, got); err != nil {
				t.Fatal(err)
			}
			got.Spec.Version = u.to
			err := c.Update(ctx, got)
			switch {
			case u.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case u.refused != "" && (err == nil || !strings.Contains(err.Error(), u.refused)):
				t.Fatalf("want an error containing %q, got %v", u.refused, err)
			}
		})
	}
}
