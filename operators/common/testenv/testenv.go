// Package testenv starts the integration-test control plane (envtest) on the
// kube-apiserver and etcd this project builds from source, with the CRDs
// from the repository's crds/ folder, so tests need no download.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot returns the repository root: the nearest parent of the working
// directory that holds go.work. go test runs in the package's directory, so
// this works for every module of the repository.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: run the tests inside the repository")
		}
		dir = parent
	}
}

// Environment returns an envtest environment, not yet started, that loads the
// named CRD files from crds/ (all of crds/ when none is named) and fails when
// one is missing. It runs the binaries in bin/; when they are not built yet
// it says how to build them.
func Environment(crdFiles ...string) (*envtest.Environment, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin")
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("envtest runs the control plane this project builds, and %s is missing: "+
				"run `make tools` (or scripts/build-tools.sh kubernetes etcd) first", filepath.Join(bin, b))
		}
	}
	paths := []string{filepath.Join(root, "crds")}
	if len(crdFiles) > 0 {
		paths = nil
		for _, f := range crdFiles {
			paths = append(paths, filepath.Join(root, "crds", f))
		}
	}
	return &envtest.Environment{
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: bin,
	}, nil
}

// Start starts an envtest control plane for one test, with the named CRD
// files, and stops it when the test ends. Under -short, which runs the unit
// tests alone, it skips the test.
func Start(t testing.TB, crdFiles ...string) *rest.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the envtest control plane (run without -short)")
	}
	env, err := Environment(crdFiles...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}
