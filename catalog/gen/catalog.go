package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/action"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/template/basic"
	"github.com/operator-framework/operator-registry/pkg/image"
	sigsyaml "sigs.k8s.io/yaml"
)

// DefaultRegistry is where the released images live, and the registry the
// template names.
const DefaultRegistry = "ghcr.io/operator-workshops"

// catalogTemplate is catalog/template.yaml, read.
type catalogTemplate struct {
	raw []byte
	cfg *declcfg.DeclarativeConfig
}

func readTemplate(file string) (*catalogTemplate, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var data basic.BasicTemplateData
	if err := sigsyaml.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	cfg, err := declcfg.LoadSlice(data.Entries)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &catalogTemplate{raw: raw, cfg: cfg}, nil
}

// parseBundleImage reads package and version off a bundle image the template
// names: <registry>/<package>-bundle:v<version>.
func parseBundleImage(ref string) (pkg string, v semver.Version, err error) {
	repo, tag, ok := strings.Cut(path.Base(ref), ":")
	pkg, isBundle := strings.CutSuffix(repo, "-bundle")
	if !ok || !isBundle || !strings.HasPrefix(tag, "v") {
		return "", v, fmt.Errorf("bundle image %q is not <registry>/<package>-bundle:v<version>", ref)
	}
	v, err = semver.Parse(tag[1:])
	if err != nil {
		return "", v, fmt.Errorf("bundle image %q: %w", ref, err)
	}
	return pkg, v, nil
}

// bundles lists the template's bundles with their channels and edges, and
// checks that channels and bundles name each other.
func (t *catalogTemplate) bundles() ([]bundle, error) {
	defaults := map[string]string{}
	for _, p := range t.cfg.Packages {
		defaults[p.Name] = p.DefaultChannel
	}
	var out []bundle
	listed := map[string]bool{}
	for _, b := range t.cfg.Bundles {
		pkg, v, err := parseBundleImage(b.Image)
		if err != nil {
			return nil, err
		}
		if _, ok := defaults[pkg]; !ok {
			return nil, fmt.Errorf("bundle image %s: the template has no package %q", b.Image, pkg)
		}
		bd := bundle{Package: pkg, Version: v, Default: defaults[pkg]}
		for _, ch := range t.cfg.Channels {
			for _, e := range ch.Entries {
				if ch.Package == pkg && e.Name == bd.Name() {
					bd.Channels = append(bd.Channels, ch.Name)
					if bd.Replaces != "" && e.Replaces != bd.Replaces {
						return nil, fmt.Errorf("%s replaces %s in one channel and %s in another", bd.Name(), bd.Replaces, e.Replaces)
					}
					bd.Replaces = e.Replaces
					if bd.SkipRange != "" && e.SkipRange != bd.SkipRange {
						return nil, fmt.Errorf("%s skips %s in one channel and %s in another", bd.Name(), bd.SkipRange, e.SkipRange)
					}
					bd.SkipRange = e.SkipRange
				}
			}
		}
		if len(bd.Channels) == 0 {
			return nil, fmt.Errorf("bundle %s is in no channel", bd.Name())
		}
		// A bundle's default channel is one it is in: the package's when it
		// is, else its first (the etcd operator's cluster-wide bundle).
		if !slices.Contains(bd.Channels, bd.Default) {
			bd.Default = bd.Channels[0]
		}
		listed[bd.Name()] = true
		out = append(out, bd)
	}
	for _, ch := range t.cfg.Channels {
		for _, e := range ch.Entries {
			if !listed[e.Name] {
				return nil, fmt.Errorf("channel %s/%s lists %s, which has no olm.bundle", ch.Package, ch.Name, e.Name)
			}
		}
	}
	return out, nil
}

// render renders the template into a file-based catalog, each bundle from
// its directory under catalogDir, its image in registry.
func (t *catalogTemplate) render(ctx context.Context, catalogDir, registry string) (*declcfg.DeclarativeConfig, error) {
	ref, err := template.New("image").Parse(registry + "/{{.Package}}-bundle:v{{.Version}}")
	if err != nil {
		return nil, err
	}
	renderBundle := func(ctx context.Context, img string) (*declcfg.DeclarativeConfig, error) {
		pkg, v, err := parseBundleImage(img)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(catalogDir, bundle{Package: pkg, Version: v}.Dir())
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("bundle %s: %w (run make bundle)", img, err)
		}
		return action.Render{
			Refs:             []string{dir},
			AllowedRefMask:   action.RefBundleDir,
			ImageRefTemplate: ref,
			Registry:         noRegistry{},
		}.Run(ctx)
	}
	tmpl := (&basic.Factory{}).CreateTemplate(renderBundle)
	return tmpl.Render(ctx, bytes.NewReader(t.raw))
}

// writeCatalog writes cfg as index/<package>/catalog.yaml, replacing what
// index/ held.
func writeCatalog(cfg *declcfg.DeclarativeConfig, indexDir string) error {
	if err := os.RemoveAll(indexDir); err != nil {
		return err
	}
	return declcfg.WriteFS(*cfg, indexDir, declcfg.WriteYAML, ".yaml")
}

// noRegistry refuses to pull: the catalog renders from bundle directories
// only, never from images on the network.
type noRegistry struct{}

var errNoPull = errors.New("the catalog renders from bundle directories; no image is pulled")

func (noRegistry) Pull(context.Context, image.Reference) error { return errNoPull }
func (noRegistry) Unpack(context.Context, image.Reference, string) error {
	return errNoPull
}
func (noRegistry) Labels(context.Context, image.Reference) (map[string]string, error) {
	return nil, errNoPull
}
func (noRegistry) Destroy() error { return nil }

// generated reports whether bundle b is built from the tree: its release is
// the current one. Older bundles are released and stay as they are.
func generated(b bundle, current string) bool { return b.Release() == current }
