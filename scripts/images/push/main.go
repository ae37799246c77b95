// Command push sends the images of docker or OCI archives (what mkimage
// writes; an OCI archive's image index goes whole, every platform) to
// the registries their names say, or with --mirror to one registry that
// stands in for theirs, under the same repository paths: the image named
// ghcr.io/operator-workshops/catalog:v0.2.0 goes to
// 127.0.0.1:5000/operator-workshops/catalog:v0.2.0 with --mirror
// 127.0.0.1:5000. With --by-registry too, the mirror stands in for several
// registries at once, each under a path of its own named as containerd
// names the registry: mysql:5.7 goes to
// 127.0.0.1:5001/docker.io/library/mysql:5.7, quay.io/coreos/etcd:v3.2.13
// to 127.0.0.1:5001/quay.io/coreos/etcd:v3.2.13 (scripts/kind.sh points
// each registry's hosts.toml at its path). Credentials come from the docker
// config (docker login), as for crane and ko.
//
// Usage:
//
//	push [--mirror HOST:PORT [--by-registry]] [--insecure] ARCHIVE...
//
// --insecure speaks plain HTTP; a loopback mirror is always spoken to so.
package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	mirror := flag.String("mirror", "", "push every image to this registry instead of its own, keeping its repository path")
	byRegistry := flag.Bool("by-registry", false, "with --mirror, put each image under a path named after its registry (docker.io, quay.io, ...)")
	insecure := flag.Bool("insecure", false, "speak plain HTTP to the registries")
	flag.Parse()
	if flag.NArg() == 0 || (*byRegistry && *mirror == "") {
		fmt.Fprintln(os.Stderr, "usage: push [--mirror HOST:PORT [--by-registry]] [--insecure] ARCHIVE...")
		os.Exit(2)
	}
	m := *mirror
	if *byRegistry {
		m += "/" + registryPath
	}
	for _, archive := range flag.Args() {
		if err := push(archive, m, *insecure || isLoopback(*mirror)); err != nil {
			fmt.Fprintln(os.Stderr, "push:", err)
			os.Exit(1)
		}
	}
}

// registryPath in a mirror's address stands for the registry of the image
// pushed: push replaces it with the registry's name.
const registryPath = "{registry}"

// push sends every tag of archive, each to its registry or to mirror (HOST:PORT,
// possibly followed by a path, where registryPath stands for the image's
// registry).
func push(archive, mirror string, insecure bool) error {
	images, cleanup, err := load(archive)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	defer cleanup()
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	for _, im := range images {
		src, err := name.NewTag(im.tag)
		if err != nil {
			return fmt.Errorf("%s: tag %s: %w", archive, im.tag, err)
		}
		to := im.tag
		if mirror != "" {
			to = strings.ReplaceAll(mirror, registryPath, registryName(src.Registry)) + "/" + src.RepositoryStr() + ":" + src.TagStr()
		}
		dst, err := name.NewTag(to, opts...)
		if err != nil {
			return fmt.Errorf("%s: %w", to, err)
		}
		if err := im.write(dst, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("pushing %s to %s: %w", im.tag, to, err)
		}
		fmt.Printf("pushed %s\n", dst)
	}
	return nil
}

// registryName is a registry's name as containerd knows it in its hosts
// directory: docker.io for Docker Hub, whose API go-containerregistry names
// by its host, index.docker.io.
func registryName(r name.Registry) string {
	if r.RegistryStr() == name.DefaultRegistry {
		return "docker.io"
	}
	return r.RegistryStr()
}

// tagged is an image of an archive under one of its names, and how to write
// it to a registry: an image, or an image index.
type tagged struct {
	tag   string
	write func(name.Reference, ...remote.Option) error
}

// load reads the named images of a docker archive, or of an OCI layout
// archive (mkimage --platform), which it unpacks into a directory that
// cleanup removes.
func load(archive string) (images []tagged, cleanup func(), err error) {
	cleanup = func() {}
	oci, err := isOCI(archive)
	if err != nil {
		return nil, cleanup, err
	}
	if !oci {
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
		if err != nil {
			return nil, cleanup, err
		}
		for _, d := range m {
			for _, t := range d.RepoTags {
				src, err := name.NewTag(t)
				if err != nil {
					return nil, cleanup, fmt.Errorf("tag %s: %w", t, err)
				}
				img, err := tarball.ImageFromPath(archive, &src)
				if err != nil {
					return nil, cleanup, fmt.Errorf("%s: %w", t, err)
				}
				images = append(images, tagged{t, func(dst name.Reference, o ...remote.Option) error { return remote.Write(dst, img, o...) }})
			}
		}
		return images, cleanup, nil
	}
	dir, err := os.MkdirTemp("", "push-")
	if err != nil {
		return nil, cleanup, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if err := untar(archive, dir); err != nil {
		return nil, cleanup, err
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, cleanup, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, cleanup, err
	}
	for _, d := range m.Manifests {
		t := d.Annotations["io.containerd.image.name"]
		if t == "" {
			return nil, cleanup, fmt.Errorf("index.json: %s has no io.containerd.image.name annotation", d.Digest)
		}
		inner, err := idx.ImageIndex(d.Digest)
		if err != nil {
			return nil, cleanup, fmt.Errorf("%s: %w", t, err)
		}
		images = append(images, tagged{t, func(dst name.Reference, o ...remote.Option) error { return remote.WriteIndex(dst, inner, o...) }})
	}
	return images, cleanup, nil
}

// isOCI reports whether an archive is an OCI image layout: an index.json at
// its top.
func isOCI(archive string) (bool, error) {
	f, err := os.Open(archive)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if path.Clean(h.Name) == "index.json" {
			return true, nil
		}
	}
}

// untar unpacks an archive's directories and regular files into dir.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Name)))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = writeFile(p, tr)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// isLoopback reports whether host:port is on this machine's loopback.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
