package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Requests are read as the API server's authorizer reads them.
func TestRightOf(t *testing.T) {
	tests := []struct {
		method, url string
		want        Right
		resource    bool
	}{
		{"GET", "/api/v1/namespaces/a/pods/p", Right{"get", "", "pods"}, true},
		{"GET", "/api/v1/namespaces/a/pods?labelSelector=x", Right{"list", "", "pods"}, true},
		{"GET", "/api/v1/pods?watch=true", Right{"watch", "", "pods"}, true},
		{"POST", "/apis/events.k8s.io/v1/namespaces/a/events", Right{"create", "events.k8s.io", "events"}, true},
		{"PATCH", "/apis/zalando.org/v1/namespaces/a/databases/d/status", Right{"patch", "zalando.org", "databases/status"}, true},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", Right{"update", "coordination.k8s.io", "leases"}, true},
		{"DELETE", "/apis/batch/v1/namespaces/a/jobs/j", Right{"delete", "batch", "jobs"}, true},
		{"GET", "/api/v1/namespaces/a", Right{"get", "", "namespaces"}, true},
		{"GET", "/apis/apps/v1", Right{}, false},
		{"GET", "/healthz", Right{}, false},
	}
	for _, tt := range tests {
		got, ok := rightOf(httptest.NewRequest(tt.method, tt.url, nil))
		if ok != tt.resource || got != tt.want {
			t.Errorf("%s %s: %v %v, want %v %v", tt.method, tt.url, got, ok, tt.want, tt.resource)
		}
	}
}

// An informer's streamed list needs list too, and an apply that creates
// needs create; a plain watch or an apply that changes needs neither.
func TestRecorderNotesWhatTheServerAuthorizes(t *testing.T) {
	status := http.StatusOK
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer server.Close()
	var rec recorder
	client := &http.Client{Transport: rec.wrap(http.DefaultTransport)}
	send := func(method, path string, accept ...string) {
		req, err := http.NewRequest(method, server.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range accept {
			req.Header.Add("Accept", a)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	send("GET", "/api/v1/pods?watch=true&sendInitialEvents=true")
	// The metadata client's Accept header (controller-runtime's OnlyMetadata).
	send("GET", "/api/v1/secrets?watch=true", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
	send("GET", "/api/v1/namespaces/a/secrets/s")
	send("PATCH", "/api/v1/namespaces/a/services/s")
	status = http.StatusCreated
	send("PATCH", "/api/v1/namespaces/a/configmaps/c")

	want := map[Right]bool{
		{"watch", "", "pods"}: true, {"list", "", "pods"}: true,
		{"watch", "", "secrets"}: true, {"get", "", "secrets"}: true,
		{"patch", "", "services"}:   true,
		{"patch", "", "configmaps"}: true, {"create", "", "configmaps"}: true,
	}
	got := rec.rights()
	for r := range want {
		if !got[r] {
			t.Errorf("%v not noted", r)
		}
	}
	for r := range got {
		if !want[r] {
			t.Errorf("%v noted, and no request needed it", r)
		}
	}
	// Pods were watched whole, Secrets for their metadata only (a get is
	// no list or watch).
	if whole := rec.readWhole([]string{"pods", "secrets", "services"}); !slices.Equal(whole, []string{"pods"}) {
		t.Errorf("read whole: %v, want [pods]", whole)
	}
}

func TestGrantedRefusesWildcards(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("role.yaml", `---
kind: ClusterRole
rules:
- apiGroups: [""]
  resources: [pods, services]
  verbs: [get, list]
---
kind: Role
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [update]
`)
	write("binding.yaml", "kind: RoleBinding\nroleRef: {kind: Role, name: x}\n")
	// Its users' roles are not the operator's rights.
	write("gordons_editor_role.yaml", "kind: ClusterRole\nrules:\n- apiGroups: [operator.prgcont.cz]\n  resources: [gordons]\n  verbs: [create]\n")
	got, err := granted(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !got[Right{"list", "", "services"}] || !got[Right{"update", "coordination.k8s.io", "leases"}] {
		t.Errorf("granted %v", got)
	}

	write("role.yaml", "kind: ClusterRole\nrules:\n- apiGroups: [\"\"]\n  resources: [\"*\"]\n  verbs: [get]\n")
	if _, err := granted(dir); err == nil || !strings.Contains(err.Error(), "wildcard") {
		t.Errorf("a wildcard resource: %v", err)
	}
}

func TestCompareRights(t *testing.T) {
	used := map[Right]bool{
		{"watch", "zalando.org", "databases"}:        true,
		{"patch", "zalando.org", "databases/status"}: true,
		{"create", "events.k8s.io", "events"}:        true,
		{"delete", "", "pods"}:                       true,
	}
	granted := map[Right]bool{
		{"watch", "zalando.org", "databases"}:             true,
		{"patch", "zalando.org", "databases/status"}:      true,
		{"update", "zalando.org", "databases/finalizers"}: true, // admission checks it
		{"create", "events.k8s.io", "events"}:             true,
		{"patch", "events.k8s.io", "events"}:              true, // a repeated event
		{"update", "", "pods"}:                            true,
	}
	err := compareRights(used, granted)
	if err == nil {
		t.Fatal("no error for a missing and an unused right")
	}
	msg := err.Error()
	for _, want := range []string{"does not allow (add them", "delete pods (core)", "no request of the integration tests used", "update pods (core)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	for _, granted := range []string{"finalizers", "patch events"} {
		if strings.Contains(msg, granted) {
			t.Errorf("%q names %s, granted without a request", msg, granted)
		}
	}
	delete(used, Right{"delete", "", "pods"})
	delete(granted, Right{"update", "", "pods"})
	if err := compareRights(used, granted); err != nil {
		t.Errorf("rights that match: %v", err)
	}
}
