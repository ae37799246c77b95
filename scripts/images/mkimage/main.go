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
//
// With --platform OS/ARCH=TAR|DIR (repeatable), the archive is an OCI image
// layout instead (what `docker save` writes since Docker 25, `ctr images
// import` and `docker load` read it): one image per platform, the --layers
// then that platform's own layer, in one image index that every tag names.
// --digest-file receives the index's digest, which a manifest can name the
// image by.
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	out                                        string
	tags, layers, entrypoint, cmd, env, expose list
	labels, platforms                          list
	workdir, user, stopSignal, digestFile      string
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
	flag.Var(&o.platforms, "platform", "OS/ARCH=TAR|DIR: an image for this platform with this last layer, in an OCI index (repeatable)")
	flag.StringVar(&o.digestFile, "digest-file", "", "file to write the image index's digest to (with --platform)")
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
	if len(o.platforms) > 0 {
		return writeIndex(o)
	}
	if o.digestFile != "" {
		return errors.New("--digest-file needs --platform: a docker archive has no index to name")
	}
	img, err := build(o, runtime.GOARCH)
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
	tmp, err := tempBeside(o.out)
	if err != nil {
		return err
	}
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	return os.Rename(tmp, o.out)
}

// build makes the image of the options' layers for linux/arch.
func build(o options, arch string) (v1.Image, error) {
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
	cf.OS, cf.Architecture = "linux", arch
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

// writeIndex writes an OCI image layout archive: an image per --platform in
// one index, named by every tag.
func writeIndex(o options) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.platforms {
		platform, src, ok := strings.Cut(p, "=")
		osName, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 || osName != "linux" || arch == "" || src == "" {
			return fmt.Errorf("--platform %s: want linux/ARCH=TAR|DIR", p)
		}
		po := o
		po.layers = append(slices.Clone(o.layers), src)
		img, err := build(po, arch)
		if err != nil {
			return fmt.Errorf("--platform %s: %w", platform, err)
		}
		img, err = ociImage(img)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	if len(o.labels) > 0 {
		annotations := map[string]string{}
		for _, kv := range o.labels {
			k, v, _ := strings.Cut(kv, "=")
			annotations[k] = v
		}
		idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.out), ".mkimage-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, t := range o.tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("--tag %s: %w", t, err)
		}
		// containerd and Docker name an imported image by the first
		// annotation; other OCI tools by the second.
		if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
			"io.containerd.image.name":          tag.Name(),
			"org.opencontainers.image.ref.name": tag.TagStr(),
		})); err != nil {
			return err
		}
	}
	tmp, err := tempBeside(o.out)
	if err != nil {
		return err
	}
	if err := tarFile(tmp, dir); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return err
	}
	if o.digestFile != "" {
		return os.WriteFile(o.digestFile, []byte(digest.String()+"\n"), 0o644)
	}
	return nil
}

// ociImage gives an image OCI media types throughout, as an OCI index's
// images have them.
func ociImage(img v1.Image) (v1.Image, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	out := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	out = mutate.ConfigMediaType(out, types.OCIConfigJSON)
	for _, l := range layers {
		if out, err = mutate.Append(out, mutate.Addendum{Layer: l, MediaType: types.OCILayer}); err != nil {
			return nil, err
		}
	}
	return mutate.ConfigFile(out, cf)
}

// tarFile writes the tree under dir to the tar file out.
func tarFile(out, dir string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := tarDir(f, dir); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// tempBeside names a new file in out's directory, of this run's own: two
// runs writing the same archive each rename a whole one into place.
func tempBeside(out string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return "", err
	}
	// Readable as an archive written by os.Create would be.
	if err := f.Chmod(0o644); err != nil {
		_ = f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}
