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
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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
