// Command gen writes the project's OLM bundles and its file-based catalog
// from the tree, with the operator-framework/api types and operator-registry
// as libraries (no operator-sdk or opm binary):
//
//	go run . bundle   # catalog/bundles/<package>/<version>/ for the current release
//	go run . catalog  # catalog/index/<package>/catalog.yaml from catalog/template.yaml
//
// `make bundle` and `make catalog` run it from the repository root. It is a
// module of its own, outside go.work, so that no operator module depends on
// OLM's tooling.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

func main() {
	// operator-registry logs every optional file a bundle lacks.
	logrus.SetLevel(logrus.WarnLevel)
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	root := fs.String("root", "../..", "The repository's root.")
	registry := fs.String("registry", DefaultRegistry, "The registry of the operator and bundle images.")
	release := fs.String("version", "", "The release the tree builds; default: catalog/VERSION.")
	out := fs.String("out", "", "Where bundle writes bundles/<package>/<version>; default: catalog/.")
	createdAt := fs.String("created-at", "", "bundle: the CSVs' createdAt (a release's time, RFC 3339).")
	platforms := fs.String("platforms", "", "bundle: the OS/ARCH pairs the operator images are built for, comma-separated (make release's PLATFORMS).")
	images := map[string]string{}
	fs.Func("image", "bundle: PACKAGE=REF, the operator image a release built for PACKAGE, by digest (repeatable).", func(v string) error {
		pkg, ref, ok := strings.Cut(v, "=")
		if !ok || pkg == "" || !strings.Contains(ref, "@sha256:") {
			return fmt.Errorf("%q: want PACKAGE=REGISTRY/IMAGE@sha256:DIGEST", v)
		}
		images[pkg] = ref
		return nil
	})
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: gen [flags] bundle|catalog")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("say bundle or catalog")
	}
	catalogDir := filepath.Join(*root, "catalog")
	tmpl, err := readTemplate(filepath.Join(catalogDir, "template.yaml"))
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "bundle":
		if *release == "" {
			v, err := os.ReadFile(filepath.Join(catalogDir, "VERSION"))
			if err != nil {
				return err
			}
			*release = strings.TrimSpace(string(v))
		}
		bundles, err := tmpl.bundles()
		if err != nil {
			return err
		}
		if *createdAt != "" {
			if _, err := time.Parse(time.RFC3339, *createdAt); err != nil {
				return fmt.Errorf("-created-at: %w", err)
			}
		}
		dest, shown := catalogDir, "catalog"
		if *out != "" {
			dest, shown = *out, *out
		}
		src := sources{root: *root, images: images, createdAt: *createdAt, platforms: strings.FieldsFunc(*platforms, func(r rune) bool { return r == ',' })}
		wrote := 0
		for _, b := range bundles {
			if !generated(b, *release) {
				continue
			}
			if err := src.writeBundle(filepath.Join(dest, b.Dir()), *registry, b); err != nil {
				return err
			}
			fmt.Printf("gen: wrote %s\n", filepath.Join(shown, b.Dir()))
			wrote++
		}
		if wrote == 0 {
			return fmt.Errorf("catalog/template.yaml names no bundle of release %s", *release)
		}
		return nil
	case "catalog":
		cfg, err := tmpl.render(ctx, catalogDir, *registry)
		if err != nil {
			return err
		}
		if err := writeCatalog(cfg, filepath.Join(catalogDir, "index")); err != nil {
			return err
		}
		fmt.Printf("gen: wrote catalog/index for %d packages, %d bundles\n", len(cfg.Packages), len(cfg.Bundles))
		return nil
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
}
