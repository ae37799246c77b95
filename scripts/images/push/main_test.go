package main

import (
	"archive/tar"
	"io/fs"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// An OCI archive's index goes to the mirror whole, under each of its names.
func TestPushOCIArchiveToMirror(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := random.Index(64, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lp, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ghcr.io/operator-workshops/op:v1", "ghcr.io/operator-workshops/op:v2"} {
		if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"io.containerd.image.name": n})); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(dir, "op.tar")
	tarTree(t, archive, filepath.Join(dir, "layout"))

	if err := push(archive, u.Host, true); err != nil {
		t.Fatal(err)
	}
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"v1", "v2"} {
		ref, err := name.NewTag(u.Host+"/operator-workshops/op:"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Index(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if d, err := got.Digest(); err != nil || d != want {
			t.Errorf("%s: digest %s, %v; want %s", ref, d, err, want)
		}
	}
}

// With --by-registry, one mirror holds the images of several registries,
// each under the path of its registry's name, Docker Hub's as docker.io.
func TestPushByRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[name.Reference]v1.Image{}
	for _, n := range []string{"mysql:5.7", "prgcont/gordon:v1.0", "quay.io/coreos/etcd:v3.2.13"} {
		tag, err := name.NewTag(n)
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = img
	}
	archive := filepath.Join(t.TempDir(), "images.tar")
	if err := tarball.MultiRefWriteToFile(archive, refs); err != nil {
		t.Fatal(err)
	}

	if err := push(archive, u.Host+"/"+registryPath, true); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"docker.io/library/mysql:5.7", "docker.io/prgcont/gordon:v1.0", "quay.io/coreos/etcd:v3.2.13"} {
		ref, err := name.NewTag(u.Host+"/"+path, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if d.Digest != want {
			t.Errorf("%s: digest %s, want %s", ref, d.Digest, want)
		}
	}
}

// tarTree writes the files under dir into the tar file out.
func tarTree(t *testing.T, out, dir string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
