package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestRun writes an image from a directory layer and reads it back as
// `ctr images import` would: every tag, the config, the files and modes.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "layer")
	if err := os.MkdirAll(filepath.Join(src, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "usr/local/bin/hello"), []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hello", filepath.Join(src, "usr/local/bin/hi")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "data"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "data"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	o := options{
		out:    out,
		tags:   list{"mysql:5.7", "quay.io/coreos/etcd:v3.2.13"},
		layers: list{src},
		cmd:    list{"hello"}, entrypoint: list{"/usr/local/bin/hi"},
		env: list{"A=b"}, expose: list{"3306/tcp"}, labels: list{"k=v"},
		user: "999", stopSignal: "SIGRTMIN+3",
	}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	for _, tag := range o.tags {
		ref, err := name.NewTag(tag)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(out, &ref)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.OS != "linux" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/usr/local/bin/hi" || len(c.Cmd) != 1 ||
			c.User != "999" || c.StopSignal != "SIGRTMIN+3" || c.Labels["k"] != "v" || len(c.Env) != 2 || c.Env[1] != "A=b" {
			t.Errorf("%s: config = %+v", tag, cf)
		}
		if _, ok := c.ExposedPorts["3306/tcp"]; !ok {
			t.Errorf("%s: exposed ports = %v, want 3306/tcp", tag, c.ExposedPorts)
		}
		files := map[string]*tar.Header{}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: layers = %v, %v; want one", tag, layers, err)
		}
		r, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimSuffix(h.Name, "/")] = h
		}
		_ = r.Close()
		if h := files["usr/local/bin/hello"]; h == nil || h.Mode&0o777 != 0o755 {
			t.Errorf("%s: hello = %+v, want mode 0755", tag, h)
		}
		if h := files["usr/local/bin/hi"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "hello" {
			t.Errorf("%s: hi = %+v, want a symlink to hello", tag, h)
		}
		if h := files["data"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
			t.Errorf("%s: data = %+v, want a directory of mode 1777", tag, h)
		}
	}
}

func TestRunNeedsOutAndTag(t *testing.T) {
	if err := run(options{out: filepath.Join(t.TempDir(), "x.tar")}); err == nil {
		t.Error("run without --tag succeeded")
	}
}

// TestRunPlatforms writes an OCI archive of two platforms and reads it back
// as containerd does: each tag names the index, whose digest --digest-file
// holds; each platform's image has the common layer, then its own.
func TestRunPlatforms(t *testing.T) {
	dir := t.TempDir()
	layer := func(name, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	o := options{
		out:        filepath.Join(dir, "image.tar"),
		digestFile: filepath.Join(dir, "digest"),
		tags:       list{"example.org/op:v1", "example.org/op:v2"},
		layers:     list{layer("common", "c")},
		platforms:  list{"linux/amd64=" + layer("amd64", "a"), "linux/arm64=" + layer("arm64", "b")},
		labels:     list{"org.opencontainers.image.revision=abc"},
		user:       "65532:65532",
	}
	if err := run(o); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(untar(t, o.out))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	outer, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(o.digestFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range outer.Manifests {
		names = append(names, d.Annotations["io.containerd.image.name"])
		if d.Digest.String()+"\n" != string(want) || d.MediaType != types.OCIImageIndex {
			t.Errorf("%s names %s %s, want the index %s", d.Annotations["io.containerd.image.name"], d.MediaType, d.Digest, want)
		}
	}
	if strings.Join(names, " ") != "example.org/op:v1 example.org/op:v2" {
		t.Errorf("names = %v", names)
	}
	inner, err := idx.ImageIndex(outer.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.Annotations["org.opencontainers.image.revision"] != "abc" || len(im.Manifests) != 2 {
		t.Fatalf("index = %+v, want two images and the revision annotation", im)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.Architecture != arch || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("image %d: %+v, want linux/%s", i, d, arch)
			continue
		}
		img, err := inner.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.Config.User != "65532:65532" || cf.Config.Labels["org.opencontainers.image.revision"] != "abc" {
			t.Errorf("%s: config = %+v", arch, cf)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 2 {
			t.Fatalf("%s: layers = %v, %v; want two", arch, layers, err)
		}
		if files := filesOf(t, layers[1]); len(files) != 1 || files[0] != arch {
			t.Errorf("%s: its own layer holds %v", arch, files)
		}
	}
}

func TestRunPlatformNeedsArchAndLayer(t *testing.T) {
	for _, p := range []string{"linux/amd64", "amd64=x", "windows/amd64=x", "linux/=x"} {
		o := options{out: filepath.Join(t.TempDir(), "x.tar"), tags: list{"a:b"}, platforms: list{p}}
		if err := run(o); err == nil || !strings.Contains(err.Error(), "want linux/ARCH") {
			t.Errorf("--platform %s: %v", p, err)
		}
	}
}

// untar unpacks the tar file into a new directory.
func untar(t *testing.T, file string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// filesOf lists the regular files of a layer.
func filesOf(t *testing.T, l v1.Layer) []string {
	t.Helper()
	r, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	var files []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
}
