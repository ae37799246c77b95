package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// make images writes the operator, bundle and catalog images without a
// daemon; each is what OLM and the real node need.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every operator and opm: not in -short runs")
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "olm-images.sh"), "build")
	cmd.Env = append(os.Environ(), "OLM_IMAGES_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/olm-images.sh build: %v\n%s", err, out)
	}

	for _, op := range []string{"database", "mysql-backup", "etcd-cluster", "gordon"} {
		t.Run(op+"-operator", func(t *testing.T) {
			img, cfg := openIndexImage(t, filepath.Join(dir, op+"-operator.tar"), DefaultRegistry+"/"+op+"-operator:v"+currentRelease(t))
			if !slices.Equal(cfg.Config.Entrypoint, []string{"/manager"}) || cfg.Config.User != "65532:65532" {
				t.Errorf("entrypoint %v, user %q; want [/manager] as 65532:65532", cfg.Config.Entrypoint, cfg.Config.User)
			}
			if l := cfg.Config.Labels; l["org.opencontainers.image.source"] == "" || l["org.opencontainers.image.revision"] == "" || l["org.opencontainers.image.version"] != currentRelease(t) {
				t.Errorf("OCI labels %v, want source, revision and version %s", l, currentRelease(t))
			}
			// A released version's image is built from the commit
			// catalog/RELEASES records for it, for each operator that
			// has a bundle of that version.
			for v, commit := range releasedCommits(t) {
				if !hasBundle(t, op, v) {
					continue
				}
				_, cfg := openIndexImage(t, filepath.Join(dir, op+"-operator-v"+v+".tar"), DefaultRegistry+"/"+op+"-operator:v"+v)
				if l := cfg.Config.Labels; l["org.opencontainers.image.revision"] != commit || l["org.opencontainers.image.version"] != v {
					t.Errorf("%s %s: OCI labels %v, want revision %s", op, v, l, commit)
				}
			}
			files := imageFiles(t, img)
			if _, ok := files["manager"]; !ok {
				t.Errorf("no /manager in %v", keys(files))
			}
			for f := range files {
				if strings.HasSuffix(f, "/sh") || f == "bin/sh" {
					t.Errorf("the image has a shell: %s", f)
				}
			}
		})
	}
	for _, b := range committedBundles(t) {
		t.Run(b.Name(), func(t *testing.T) {
			img, cfg := openImage(t, filepath.Join(dir, b.Package+"-bundle-"+b.Version.String()+".tar"), bundleImage(DefaultRegistry, b))
			want := bundleLabels(b)
			for k, v := range want {
				if cfg.Config.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, cfg.Config.Labels[k], v)
				}
			}
			files := imageFiles(t, img)
			for _, f := range []string{"manifests/" + b.Package + ".clusterserviceversion.yaml", "metadata/annotations.yaml"} {
				disk, err := os.ReadFile(filepath.Join(root, "catalog", b.Dir(), f))
				if err != nil {
					t.Fatal(err)
				}
				if files[f] != string(disk) {
					t.Errorf("%s in the image differs from catalog/%s/%s", f, b.Dir(), f)
				}
			}
			if _, ok := files["bundle.Dockerfile"]; ok {
				t.Error("the bundle image carries bundle.Dockerfile")
			}
		})
	}
	t.Run("catalog", func(t *testing.T) {
		img, cfg := openImage(t, filepath.Join(dir, "catalog.tar"), DefaultRegistry+"/catalog:v"+currentRelease(t))
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/bin/opm"}) || cfg.Config.Labels["operators.operatorframework.io.index.configs.v1"] != "/configs" {
			t.Errorf("entrypoint %v, labels %v", cfg.Config.Entrypoint, cfg.Config.Labels)
		}
		files := imageFiles(t, img)
		for _, pkg := range []string{"database", "mysql-backup", "etcd-cluster", "gordon"} {
			disk, err := os.ReadFile(filepath.Join(root, "catalog", "index", pkg, "catalog.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if files["configs/"+pkg+"/catalog.yaml"] != string(disk) {
				t.Errorf("configs/%s/catalog.yaml in the image differs from catalog/index", pkg)
			}
		}
	})
}

// openIndexImage opens this machine's platform's image of the index an OCI
// archive names tag.
func openIndexImage(t *testing.T, archive, tag string) (v1.Image, *v1.ConfigFile) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", archive, err, out)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s is no OCI archive: %v", archive, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Annotations["io.containerd.image.name"] != tag {
			continue
		}
		inner, err := idx.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		im, err := inner.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range im.Manifests {
			if p.Platform == nil || p.Platform.OS != "linux" || p.Platform.Architecture != runtime.GOARCH {
				continue
			}
			img, err := inner.Image(p.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			return img, cfg
		}
		t.Fatalf("%s: %s has no linux/%s image", archive, tag, runtime.GOARCH)
	}
	t.Fatalf("%s has no image %s", archive, tag)
	return nil, nil
}

func openImage(t *testing.T, archive, tag string) (v1.Image, *v1.ConfigFile) {
	t.Helper()
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &ref)
	if err != nil {
		t.Fatalf("%s has no image %s: %v", archive, tag, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return img, cfg
}

// imageFiles reads the image's flattened file system: regular files with
// their content ("" past 1 MiB), directories and links with none.
func imageFiles(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		p := strings.TrimPrefix(filepath.Clean(h.Name), "/")
		files[p] = ""
		if h.Typeflag == tar.TypeReg && h.Size < 1<<20 {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[p] = string(data)
		}
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// releasedCommits reads catalog/RELEASES: each released version's commit.
func releasedCommits(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "catalog", "RELEASES"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			out[f[0]] = f[1]
		}
	}
	if len(out) == 0 {
		t.Fatal("catalog/RELEASES lists no release")
	}
	return out
}

// hasBundle reports whether the catalog has a bundle of op at version v.
func hasBundle(t *testing.T, op, v string) bool {
	t.Helper()
	for _, b := range committedBundles(t) {
		if b.Package == op && b.Version.String() == v {
			return true
		}
	}
	return false
}
