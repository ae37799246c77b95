// Command mkimage writes a container image as a docker archive (what `docker
// save` writes and `ctr images import` reads) without a daemon or a registry,
// with github.com/google/go-containerregistry. scripts/images.sh calls it once
// per image of the local cluster's real node.
//
// Usage:
//
//	mkimage --out FILE --tag NAME [--tag NAME]... [--layer TAR|DIR]...
//	        [--entrypoint ARG]... [--cmd ARG]... [--env K=V]... [--workdir DIR]
//	        [--user USER] [--expose PORT/PROTO]... [--label K=V]...
//	        [--stop-signal SIGNAL]
//
// Each --layer is an uncompressed tar file (a root filesystem from
// debootstrap) or a directory, whose tree becomes the layer as it is on disk:
// modes, owners and symlinks included. Layers apply in the order given. Every
// tag names the same image.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	out                                        string
	tags, layers, entrypoint, cmd, env, expose list
	labels                                     list
	workdir, user, stopSignal                  string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "", "docker archive to write")
	flag.Var(&o.tags, "tag", "image name, as pods name it (repeatable)")
	flag.Var(&o.layers, "layer", "tar file or directory to add as a layer (repeatable, in order)")
	flag.Var(&o.entrypoint, "entrypoint", "entrypoint argument (repeatable)")
	flag.Var(&o.cmd, "cmd", "command argument (repeatable)")
	flag.Var(&o.env, "env", "environment variable K=V (repeatable)")
	flag.Var(&o.expose, "expose", "exposed port, e.g. 3306/tcp (repeatable)")
	flag.Var(&o.labels, "label", "label K=V (repeatable)")
	flag.StringVar(&o.workdir, "workdir", "", "working directory")
	flag.StringVar(&o.user, "user", "", "user the container runs as")
	flag.StringVar(&o.stopSignal, "stop-signal", "", "signal that stops the container (SIGRTMIN+3 for systemd)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.out == "" || len(o.tags) == 0 || flag.NArg() > 0 {
		return errors.New("usage: mkimage --out FILE --tag NAME [--layer TAR|DIR]... (see the package comment)")
	}
	img, err := build(o)
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range o.tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("--tag %s: %w", t, err)
		}
		refs[tag] = img
	}
	// Write next to the target and rename, so that a cut-short run never
	// leaves an archive that looks complete.
	tmp := o.out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	return os.Rename(tmp, o.out)
}

func build(o options) (v1.Image, error) {
	var layers []v1.Layer
	for _, src := range o.layers {
		l, err := layer(src)
		if err != nil {
			return nil, fmt.Errorf("--layer %s: %w", src, err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = o.entrypoint
	cf.Config.Cmd = o.cmd
	cf.Config.WorkingDir = o.workdir
	cf.Config.User = o.user
	cf.Config.StopSignal = o.stopSignal
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, o.env...)
	for _, p := range o.expose {
		if cf.Config.ExposedPorts == nil {
			cf.Config.ExposedPorts = map[string]struct{}{}
		}
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	for _, kv := range o.labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--label %s: want K=V", kv)
		}
		if cf.Config.Labels == nil {
			cf.Config.Labels = map[string]string{}
		}
		cf.Config.Labels[k] = v
	}
	return mutate.ConfigFile(img, cf)
}

// layer reads a tar file as it is, or a directory's tree as a tar in memory
// (the directories hold a few binaries and scripts). Layers are gzipped at
// the fastest level: the archive is imported once, on this machine, and a
// 600 MB root filesystem compresses in seconds instead of a minute.
func layer(src string) (v1.Layer, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return tarball.LayerFromFile(src, tarball.WithCompressionLevel(gzip.BestSpeed))
	}
	var buf bytes.Buffer
	if err := tarDir(&buf, src); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed))
}

// tarDir writes the tree under dir to w with paths relative to dir. Times
// are zeroed so that the same tree gives the same layer digest.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.ModTime, h.AccessTime, h.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		h.Uname, h.Gname = "", ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			h.Uid, h.Gid = int(st.Uid), int(st.Gid)
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
