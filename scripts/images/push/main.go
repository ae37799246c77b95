// Command push sends the images of docker archives (what mkimage writes) to
// the registries their names say, or with --mirror to one registry that
// stands in for theirs, under the same repository paths: the image named
// ghcr.io/operator-workshops/catalog:v0.2.0 goes to
// 127.0.0.1:5000/operator-workshops/catalog:v0.2.0 with --mirror
// 127.0.0.1:5000. Credentials come from the docker config (docker login), as
// for crane and ko.
//
// Usage:
//
//	push [--mirror HOST:PORT] [--insecure] ARCHIVE...
//
// --insecure speaks plain HTTP; a loopback mirror is always spoken to so.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	mirror := flag.String("mirror", "", "push every image to this registry instead of its own, keeping its repository path")
	insecure := flag.Bool("insecure", false, "speak plain HTTP to the registries")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: push [--mirror HOST:PORT] [--insecure] ARCHIVE...")
		os.Exit(2)
	}
	for _, archive := range flag.Args() {
		if err := push(archive, *mirror, *insecure || isLoopback(*mirror)); err != nil {
			fmt.Fprintln(os.Stderr, "push:", err)
			os.Exit(1)
		}
	}
}

// push sends every tag of archive, each to its registry or to mirror.
func push(archive, mirror string, insecure bool) error {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	for _, d := range m {
		for _, t := range d.RepoTags {
			src, err := name.NewTag(t)
			if err != nil {
				return fmt.Errorf("%s: tag %s: %w", archive, t, err)
			}
			img, err := tarball.ImageFromPath(archive, &src)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", archive, t, err)
			}
			to := t
			if mirror != "" {
				to = mirror + "/" + src.RepositoryStr() + ":" + src.TagStr()
			}
			dst, err := name.NewTag(to, opts...)
			if err != nil {
				return fmt.Errorf("%s: %w", to, err)
			}
			if err := remote.Write(dst, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
				return fmt.Errorf("pushing %s to %s: %w", t, to, err)
			}
			fmt.Printf("pushed %s\n", dst)
		}
	}
	return nil
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
