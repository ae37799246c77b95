package labs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// A learner's $KUBECONFIG may list several files, as kubectl allows: the
// kubeconfig the operator runs with under its own RBAC is read from all of
// them, merged, as kubectl reads them.
func TestKubeconfigAsReadsEveryFileOfKUBECONFIG(t *testing.T) {
	dir := t.TempDir()
	clusters := filepath.Join(dir, "clusters")
	users := filepath.Join(dir, "users")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(clusters, `apiVersion: v1
kind: Config
current-context: lab
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: lab
  context: {cluster: lab, user: admin}
`)
	write(users, `apiVersion: v1
kind: Config
users:
- name: admin
  user: {token: admin-token}
`)
	r := &taskRun{env: []string{"KUBECONFIG=" + strings.Join([]string{clusters, users}, string(filepath.ListSeparator))}}
	path, err := r.kubeconfigAs("lab-10-operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(path)) })
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := config.Contexts[config.CurrentContext]
	if ctx == nil || config.Clusters[ctx.Cluster] == nil || config.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("the written kubeconfig lacks the current context's cluster or user: %+v", config)
	}
	if a := config.AuthInfos[ctx.AuthInfo]; a.Token != "admin-token" || a.Impersonate != "lab-10-operator" {
		t.Errorf("user %+v: want the admin's token, impersonating lab-10-operator", a)
	}
}
